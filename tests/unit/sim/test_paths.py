"""Simulated kernel files are replaced whole: a reader sees the old value or the new one, never an empty
file (the kernel's sysfs never shows a counter half-written; the lab's readers parse integers from them).
Written in place (truncate, then write), the same race showed "" to the reader here within 20000 rewrites."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from clusterforge.lab.sim import boot, paths


def _race(f: Path, write) -> set[str]:  # type: ignore[no-untyped-def]
    f.write_text("0\n")
    seen: set[str] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.add(f.read_text())

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(1, 5001):
            write(f, f"{i}\n")
    finally:
        stop.set()
        t.join()
    return seen


def test_a_reader_never_sees_an_empty_counter(tmp_path: Path) -> None:
    seen = _race(tmp_path / "symbol_error", paths.replace_text)
    assert "" not in seen and len(seen) > 1  # the reader did see the value move


def test_unchanged_contents_are_not_rewritten(tmp_path: Path) -> None:
    f = tmp_path / "state"
    f.write_text("4: ACTIVE\n")
    before = os.stat(f)
    paths.replace_text(f, "4: ACTIVE\n")
    after = os.stat(f)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    paths.replace_text(f, "1: DOWN\n")
    assert f.read_text() == "1: DOWN\n" and not list(tmp_path.glob(".*"))


def test_written_in_place_where_nothing_can_be_made_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    inode = os.stat(f).st_ino

    def refuse(src: object, dst: object) -> None:
        raise PermissionError("read-only directory")

    monkeypatch.setattr(paths.os, "replace", refuse)
    paths.replace_text(f, "always madvise [never]\n")
    assert f.read_text() == "always madvise [never]\n" and os.stat(f).st_ino == inode
    assert not list(tmp_path.glob(".*"))


def test_bind_mounted_views_keep_their_inode_and_never_read_empty(tmp_path: Path) -> None:
    """/proc/meminfo and friends are bind-mounted files: rewritten in place, yet never seen empty."""
    f = tmp_path / "meminfo"
    f.touch()
    inode = os.stat(f).st_ino
    seen = _race(f, lambda target, text: boot.write_in_place(str(target), f"MemFree: {text}"))
    assert "" not in seen and len(seen) > 1 and os.stat(f).st_ino == inode
    boot.write_in_place(str(f), "short\n")
    assert f.read_text() == "short\n"  # cut to length after the write
