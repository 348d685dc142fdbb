"""A tiny Chrome DevTools Protocol client over `--remote-debugging-pipe` (stdlib only): load a page in
headless Chromium, collect its console messages, exceptions and log entries, evaluate expressions in it.

Chromium reads NUL-terminated JSON commands from fd 3 and writes replies and events to fd 4.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
]


def chromium() -> str | None:
    return next(
        (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None
    )


@dataclass
class PageLoad:
    console: list[tuple[str, str]] = field(default_factory=list)  # (type, text)
    exceptions: list[str] = field(default_factory=list)
    log: list[tuple[str, str]] = field(default_factory=list)  # (level, text): failed loads, CSP, ...
    values: dict[str, Any] = field(default_factory=dict)  # expression -> value

    @property
    def errors(self) -> list[str]:
        return (
            [t for k, t in self.console if k in ("error", "assert")]
            + self.exceptions
            + [t for lvl, t in self.log if lvl == "error"]
        )


class Browser:
    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="cf-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def fds() -> None:  # child: fd 3 = commands in, fd 4 = replies out
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,
            pass_fds=(3, 4),
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(OSError, TimeoutError, RuntimeError):
            self.send("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._out_r, 65536)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        data: dict[str, Any] = json.loads(msg)
        return data

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30,
    ) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            data = self._read(deadline)
            if data.get("id") == self._id:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result") or {}
            self.events.append(data)

    def wait_event(self, method: str, timeout: float, match: Any = None) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for e in self.events[seen:]:
                if e.get("method") == method and (match is None or match(e)):
                    return e
            seen = len(self.events)
            self.events.append(self._read(deadline))


def load(url: str, expressions: list[str], ready_text: str | None = None, timeout: float = 60) -> PageLoad:
    """Open `url` in a fresh headless Chromium; wait for the load event (and a console message containing
    `ready_text`), then evaluate `expressions`."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
    b = Browser(binary)
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            b.send(f"{domain}.enable", session=session)
        b.send("Page.navigate", {"url": url}, session=session)
        b.wait_event("Page.loadEventFired", timeout)
        if ready_text:
            b.wait_event(
                "Runtime.consoleAPICalled",
                timeout,
                lambda e: ready_text in json.dumps(e["params"].get("args", [])),
            )
        out = PageLoad()
        for expr in expressions:
            r = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
            out.values[expr] = (r.get("result") or {}).get("value")
        for e in b.events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.console.append((p.get("type", ""), text))
            elif e.get("method") == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.exceptions.append((d.get("exception") or {}).get("description") or d.get("text", ""))
            elif e.get("method") == "Log.entryAdded":
                entry = p.get("entry", {})
                out.log.append((entry.get("level", ""), entry.get("text", "") + " " + entry.get("url", "")))
        return out
    finally:
        b.close()
