"""NIC and RDMA counter listings: `ethtool -S <netdev>`, `rdma statistic show` and a listing of
/sys/class/infiniband/<dev>/ports/<port>/hw_counters/ (`ls -l`, or plain `ls`).

`ethtool -S`: an optional ``NIC statistics:`` header, then ``<name>: <value>`` lines (also when the output
was filtered with grep). `rdma statistic`: one ``link <dev>/<port> <name> <value> ...`` line per port.
A cut last line raises ParseError; with ``partial=True`` it is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._common import require_text, split_lines
from .errors import ParseError

_ETH = re.compile(r"^([\w.\-\[\]]+):\s+(-?\d+)$")


@dataclass(frozen=True)
class EthtoolStats:
    counters: dict[str, int] = field(hash=False)

    def prio(self, what: str, prio: int) -> int | None:
        """Per-priority counter, e.g. prio("rx", 3, ) -> rx_prio3_pause; None when the NIC lacks it."""
        return self.counters.get(what.format(prio=prio))


def parse_ethtool_stats(text: str, *, partial: bool = False) -> EthtoolStats:
    require_text("ethtool -S", text)
    lines = split_lines(text)
    counters: dict[str, int] = {}
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line == "NIC statistics:":
            continue
        m = _ETH.match(line)
        if m is None:
            if partial and all(not ln.strip() for ln in lines[no:]):
                break
            raise ParseError("ethtool -S", "not a '<counter>: <value>' line", line_no=no, line=raw)
        counters[m.group(1)] = int(m.group(2))
    if not counters:
        raise ParseError("ethtool -S", "no counters")
    return EthtoolStats(counters)


@dataclass(frozen=True)
class RdmaPortStats:
    device: str  # mlx5_0, mlx5_bond_0
    port: int
    counters: dict[str, int] = field(hash=False)


_LINK = re.compile(r"^link\s+(\S+)/(\d+)\s+(.*)$")


def parse_rdma_statistic(text: str, *, partial: bool = False) -> tuple[RdmaPortStats, ...]:
    require_text("rdma statistic", text)
    lines = split_lines(text)
    out: list[RdmaPortStats] = []
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _LINK.match(line)
        tokens = m.group(3).split() if m else []
        ok = m is not None and len(tokens) % 2 == 0 and all(v.isdigit() for v in tokens[1::2])
        if not ok:
            if partial and all(not ln.strip() for ln in lines[no:]):
                break
            raise ParseError(
                "rdma statistic", "not a 'link DEV/PORT name value ...' line", line_no=no, line=raw
            )
        assert m is not None
        out.append(
            RdmaPortStats(
                m.group(1),
                int(m.group(2)),
                {k: int(v) for k, v in zip(tokens[::2], tokens[1::2], strict=True)},
            )
        )
    if not out:
        raise ParseError("rdma statistic", "no link lines")
    return tuple(out)


_LS_L = re.compile(r"^[-dlrwxsStT]{10}[.+@]?\s+\d+\s+\S+\s+\S+\s+\d+\s+\w{3}\s+\d+\s+[\d:]+\s+(\S+)$")


@dataclass(frozen=True)
class CounterFiles:
    names: tuple[str, ...]
    writable: tuple[str, ...]  # only from `ls -l`: files with a write bit for the owner


def parse_hw_counters_listing(text: str, *, partial: bool = False) -> CounterFiles:
    require_text("hw_counters", text)
    names: list[str] = []
    writable: list[str] = []
    lines = split_lines(text)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("total "):
            continue
        m = _LS_L.match(line)
        if m:
            names.append(m.group(1))
            if line[2] == "w":
                writable.append(m.group(1))
        elif re.fullmatch(r"[a-z0-9_]+", line):
            names.append(line)
        elif partial and all(not ln.strip() for ln in lines[no:]):
            break
        else:
            raise ParseError("hw_counters", "not a file-listing line", line_no=no, line=raw)
    if not names:
        raise ParseError("hw_counters", "no counter files listed")
    return CounterFiles(tuple(names), tuple(writable))
