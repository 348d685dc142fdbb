"""Simulated kernel log and ``dmesg``.

A container cannot read the kernel ring buffer (nspawn drops CAP_SYSLOG; /dev/kmsg is absent), so the
simulator keeps the node's kernel messages in /run/clusterforge-sim/kmsg.jsonl (per boot, like the ring
buffer) and its ``dmesg`` prints them in dmesg's formats (-T/--ctime, --time-format=iso, -l, -x, -k). Each
message is also sent to the node's journal with SYSLOG_IDENTIFIER=kernel, so ``journalctl -t kernel`` and
/var/log/syslog greps see Xid lines (``journalctl -k`` cannot: journald only accepts _TRANSPORT=kernel from
the real kmsg).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any

from . import paths

KMSG = f"{paths.RUN}/kmsg.jsonl"
LEVELS = ["emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"]


def uptime() -> float:
    """Seconds since the kernel booted (what printk timestamps count); a node shares the host kernel's."""
    if paths.in_node():
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    try:
        return float(paths.read("/proc/uptime", "0 0").split()[0])
    except (ValueError, IndexError):
        return 0.0


def log(msg: str, level: int = 6, journal: bool = True) -> None:
    rec = {"t": uptime(), "level": level, "msg": msg}
    target = paths.p(KMSG)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a") as f:
        f.write(json.dumps(rec) + "\n")
    if journal and paths.in_node():
        _journal(msg, level)


def _journal(msg: str, level: int) -> None:
    payload = f"MESSAGE={msg}\nPRIORITY={level}\nSYSLOG_IDENTIFIER=kernel\nSYSLOG_FACILITY=0\n".encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(payload, "/run/systemd/journal/socket")
    except OSError:
        pass


def records() -> list[dict[str, Any]]:
    out = []
    for line in paths.read(KMSG).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def xid_lines(bus: str, uuid: str, xid: int, driver_version: str) -> list[tuple[str, int]]:
    """NVRM lines as the driver prints them (tests/fixtures/real xid__*); bus like 0000:19:00."""
    if xid == 79:
        return [
            (f"NVRM: GPU at PCI:{bus}: {uuid}", 4),
            (f"NVRM: Xid (PCI:{bus}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", 3),
            (f"NVRM: GPU {bus}.0: GPU has fallen off the bus.", 3),
            (
                "NVRM: A GPU crash dump has been created. If possible, please run\n"
                "NVRM: nvidia-bug-report.sh as root to collect this data before\n"
                "NVRM: the NVIDIA kernel module is unloaded.",
                3,
            ),
        ]
    if xid == 48:
        return [
            (
                f"NVRM: Xid (PCI:{bus}): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit "
                "error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
                3,
            ),
            (
                f"NVRM: Xid (PCI:{bus}): 94, pid='<unknown>', name=<unknown>, Contained: CE User Channel "
                "(0x9). RST: No, D-RST: No",
                3,
            ),
        ]
    if xid == 63:
        return [
            (
                f"NVRM: Xid (PCI:{bus}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                "(0x00000000000bb1e0) Pending row remapping,   reset gpu to activate.",
                4,
            )
        ]
    return [(f"NVRM: Xid (PCI:{bus}): {xid}, pid='<unknown>', name=<unknown>, simulated", 3)]


def _stamp(t: float, mode: str) -> str:
    if mode == "raw":
        return f"[{t:12.6f}] "
    boot = time.time() - uptime()
    wall = boot + t
    if mode == "ctime":
        return f"[{time.strftime('%a %b %e %H:%M:%S %Y', time.localtime(wall))}] "
    frac = f"{wall % 1:.6f}"[2:]
    tz = time.strftime("%z", time.localtime(wall))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(wall)) + f",{frac}{tz[:3]}:{tz[3:]} "


def main(argv: list[str]) -> int:
    mode = "raw"
    levels: set[int] | None = None
    decode = False
    it = iter(range(len(argv)))
    for i in it:
        a = argv[i]
        if a in ("-T", "--ctime"):
            mode = "ctime"
        elif a.startswith("--time-format"):
            val = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            mode = {"iso": "iso", "ctime": "ctime"}.get(val, "raw")
        elif a in ("-l", "--level") or a.startswith("--level="):
            val = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            levels = {LEVELS.index(x) for x in val.split(",") if x in LEVELS}
        elif a in ("-x", "--decode"):
            decode = True
        elif a in ("-C", "--clear"):
            paths.p(KMSG).write_text("")
            return 0
    out = []
    for rec in records():
        if levels is not None and rec["level"] not in levels:
            continue
        prefix = _stamp(rec["t"], mode)
        dec = f"kern  :{LEVELS[rec['level']]:<6}: " if decode else ""
        first, *rest = rec["msg"].split("\n")
        out.append(f"{dec}{prefix}{first}")
        out += [" " * len(dec + prefix) + r for r in rest]
    try:
        sys.stdout.write("".join(line + "\n" for line in out))
    except BrokenPipeError:
        os._exit(0)
    return 0
