"""`file` pool manager: a JSON registry of node states, for clusters without a scheduler (and tests).

The registry is rewritten atomically (temp file in the same folder, fsync, rename, fsync of the folder)
under an exclusive `flock` on `<registry>.lock`, so a crash leaves the previous registry whole and two
writers never lose each other's changes.

    {"schema": 1, "nodes": {"ib-01": {"state": "drained", "reason": "clusterforge: ...",
                                      "labels": {...}, "updated_at": "..."}}}
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clusterforge.pool.base import (
    NodeState,
    PoolError,
    PoolManager,
    check_certificate_node,
    check_resume_allowed,
    sanitize_reason,
)
from clusterforge.records._util import iso, state_dir, utcnow

SCHEMA = 1


def default_registry(cluster: str) -> Path:
    return state_dir() / "pool" / f"{cluster}.json"


class FilePool(PoolManager):
    name = "file"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    # --- registry I/O ----------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"schema": SCHEMA, "nodes": {}}
        except (OSError, json.JSONDecodeError) as exc:
            raise PoolError(f"{self.path}: unreadable pool registry: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
            raise PoolError(f"{self.path}: not a pool registry (no 'nodes' object)")
        return data

    def _write(self, data: Mapping[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    @contextmanager
    def _update(self) -> Iterator[dict[str, Any]]:
        with self._locked():
            data = self._read()
            yield data
            data["schema"] = SCHEMA
            self._write(data)

    @staticmethod
    def _state(node: str, entry: Mapping[str, Any] | None) -> NodeState:
        if entry is None:
            return NodeState(node, "unknown", "not in the pool registry")
        return NodeState(
            node,
            str(entry.get("state", "unknown")),
            str(entry.get("reason", "")),
            dict(entry.get("labels", {})),
            raw=str(entry.get("state", "")),
        )

    # --- PoolManager -----------------------------------------------------------------------------
    def status(self, nodes: Iterable[str] | None = None) -> dict[str, NodeState]:
        with self._locked():
            known = self._read()["nodes"]
        names = list(nodes) if nodes is not None else sorted(known)
        return {n: self._state(n, known.get(n)) for n in names}

    def drain(self, node: str, reason: str, *, force: bool = False) -> bool:
        reason = sanitize_reason(reason)
        with self._update() as data:
            entry = data["nodes"].setdefault(node, {"state": "unknown", "reason": "", "labels": {}})
            current = self._state(node, entry)
            if current.state in ("drained", "draining") and not current.ours and not force:
                return False
            entry.update(state="drained", reason=reason, updated_at=iso(utcnow()))
            entry.setdefault("labels", {})["clusterforge.io/certified"] = "false"
        return True

    def resume(self, node: str, *, force: bool = False) -> bool:
        with self._update() as data:
            entry = data["nodes"].setdefault(node, {"state": "unknown", "reason": "", "labels": {}})
            current = self._state(node, entry)
            check_resume_allowed(current, force)
            if current.state not in ("drained", "draining", "unknown", "down"):
                return False
            entry.update(state="idle", reason="", updated_at=iso(utcnow()))
        return True

    def admit(self, node: str, certificate: Mapping[str, Any], *, force: bool = False) -> None:
        check_certificate_node(node, certificate)
        with self._update() as data:
            entry = data["nodes"].setdefault(node, {"state": "unknown", "reason": "", "labels": {}})
            check_resume_allowed(self._state(node, entry), force)
            entry.update(state="idle", reason="", updated_at=iso(utcnow()))
            entry.setdefault("labels", {}).update(
                {
                    "clusterforge.io/certified": "true",
                    "clusterforge.io/tier": str(certificate.get("tier", "")),
                    "clusterforge.io/expectation-digest": str(certificate.get("expectation_digest", "")),
                }
            )
