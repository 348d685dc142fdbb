"""Many cheap commands in one SSH round trip: the batch script, its output format, and the registry of
commands the validator modules declare (prefetched per node by the validators' conftest)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from clusterforge.remote.commands import RC_REMOTE_255, RC_SSH

RC_SKIPPED_HUNG = 253  # not run: an earlier command of the same tool hung in this batch

#: validator modules register here the cheap commands their checks will run for a node; the validators'
#: conftest prefetches them in one round trip per node (:meth:`Probe.prefetch`)
PREFETCH: dict[str, Callable[[Any], list[str]]] = {}


def prefetches(fn: Callable[[Any], list[str]]) -> Callable[[Any], list[str]]:
    PREFETCH[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return fn


_RCS, _DATA = b"@@CF@@ rc", b"@@CF@@ data\n"


def batch_script(commands: list[str], timeout: int) -> str:
    """One shell script running every command under `timeout` into numbered files (few processes per
    command), then printing ``@@CF@@ rc i:rc ...``, one ``stat`` line per file (``path size``),
    ``@@CF@@ data`` and every file's bytes in the same order."""
    lines = ["t=$(mktemp -d) || exit 90", 'cd "$t" || exit 90', "rcs=''", "hung=' '"]
    for i, c in enumerate(commands):
        tool = shlex.quote(c.split()[0] if c.split() else c)
        run = (
            f"LC_ALL=C timeout -k 2 {int(timeout)} sh -c {shlex.quote(c)} >{i:05d}.o 2>{i:05d}.e </dev/null; "
            f'r=$?; case $r in 124|137) hung="$hung"{tool}" ";; esac'
        )
        skip = f": >{i:05d}.o; : >{i:05d}.e; r={RC_SKIPPED_HUNG}"
        lines.append(f'case "$hung" in *" "{tool}" "*) {skip};; *) {run};; esac; rcs="$rcs {i}:$r"')
    lines += [
        'echo "@@CF@@ rc$rcs"',
        "stat -c '%n %s' [0-9]*",
        "echo '@@CF@@ data'",
        "cat [0-9]*",
        'cd / && rm -rf "$t"',
    ]
    return "\n".join(lines)


def parse_batch(out: bytes, count: int) -> dict[int, tuple[int, str, str]]:
    """Results of :func:`batch_script` by command index; anything that does not fit gives no result."""
    head, sep, data = out.partition(_DATA)
    lines = head.splitlines()
    if not sep or not lines or not lines[0].startswith(_RCS):
        return {}
    try:
        rcs = {int(i): int(rc) for i, rc in (x.split(b":") for x in lines[0][len(_RCS) :].split())}
        sizes = [(name.decode(), int(size)) for name, size in (ln.rsplit(b" ", 1) for ln in lines[1:])]
    except ValueError:
        return {}
    parts: dict[str, bytes] = {}
    pos = 0
    for name, size in sizes:
        parts[name] = data[pos : pos + size]
        pos += size
    if pos != len(data):
        return {}
    results: dict[int, tuple[int, str, str]] = {}
    for i in range(count):
        o, e = parts.get(f"{i:05d}.o"), parts.get(f"{i:05d}.e")
        if i in rcs and o is not None and e is not None:
            rc = RC_REMOTE_255 if rcs[i] == RC_SSH else rcs[i]
            results[i] = (rc, o.decode(errors="replace"), e.decode(errors="replace"))
    return results
