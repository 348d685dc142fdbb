"""Framing of a node's answer on a stream that many nodes share (a Slurm job step's stdout).

`srun` merges every task's stdout into its own, a line at a time but with no promise about lines longer
than its I/O buffer; so a node never prints its answer as one long line. It prints it zlib-compressed,
base64-encoded and cut into short lines, each naming the node, the frame's number and the count:
``CFFRAME1 <node> <i> <n> <chunk>``. Anything else on the stream (a launcher's own messages) is left
alone. Standard library only: the node side imports this from the checker program.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Iterable, Iterator

MAGIC = "CFFRAME1"
CHUNK = 400  # characters of base64 per line: far below srun's buffer, whole lines stay whole
_LINE = re.compile(rf"^(?:\d+: )?{MAGIC} (\S+) (\d+) (\d+) ([A-Za-z0-9+/=]*)$")


def encode(node: str, payload: bytes) -> Iterator[str]:
    """The lines (without newline) that carry `payload` from `node`."""
    if not node or any(c.isspace() for c in node):
        raise ValueError(f"node name {node!r} cannot head a frame")
    text = base64.b64encode(zlib.compress(payload, 6)).decode("ascii")
    chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]
    for i, chunk in enumerate(chunks):
        yield f"{MAGIC} {node} {i} {len(chunks)} {chunk}"


def decode(lines: Iterable[str]) -> tuple[dict[str, bytes], dict[str, str]]:
    """(payload per node, why per node whose frames are incomplete or do not decode). A line `srun
    --label` prefixed with its task number is read the same."""
    parts: dict[str, dict[int, str]] = {}
    counts: dict[str, int] = {}
    bad: dict[str, str] = {}
    for line in lines:
        m = _LINE.match(line.rstrip("\r\n"))
        if m is None:
            continue
        node, i, n, chunk = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if counts.setdefault(node, n) != n or i >= n:
            bad[node] = f"frames disagree on their count ({counts[node]} and {n})"
            continue
        parts.setdefault(node, {})[i] = chunk
    out: dict[str, bytes] = {}
    for node, got in parts.items():
        if node in bad:
            continue
        missing = counts[node] - len(got)
        if missing:
            bad[node] = f"{missing} of {counts[node]} frames missing (the answer was cut short)"
            continue
        try:
            out[node] = zlib.decompress(base64.b64decode("".join(got[i] for i in range(counts[node]))))
        except (ValueError, zlib.error) as exc:
            bad[node] = f"frames do not decode: {exc}"
    return out, bad
