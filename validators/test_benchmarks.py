"""The benchmark tools the full tier and burn-in run (nccl-tests' all_reduce_perf, nvbandwidth), at the
spec's pins (software.nccl_tests / software.nvbandwidth), as the benchmarks role installs them.

Quick tier, so that a node without them is never admitted and then sent to a full-tier run or a burn-in
that can only report `error`. A tool missing from PATH is `error` (cannot certify: <tool> missing) naming
the role and tag that install it; a tool present at another version or from the wrong place is `fail`.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from clusterforge.certify import readers
from clusterforge.certify.checks import CheckError, Probe, expect, prefetches
from clusterforge.certify.fixes import hint
from clusterforge.hw import ParseError
from clusterforge.plan.expect import NodeExpect

pytestmark = pytest.mark.quick


class Tool(NamedTuple):
    dir: str  # install directory name <prefix>/<dir>-<version> (the role's `dir`)
    binary: str  # what the full tier and burn-in run


TOOLS = {
    "nccl_tests": Tool("nccl-tests", "all_reduce_perf"),
    "nvbandwidth": Tool("nvbandwidth", "nvbandwidth"),
}
#: the benchmarks role's default benchmarks_prefix (artifact/source installs live below it)
PREFIX = "/opt/clusterforge/benchmarks"
#: as validators/test_software.py (one query shared by both)
DPKG = "dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'"
#: each binary and where PATH resolves it (symlinks followed), or "-" when it is not on PATH
WHICH = (
    "for t in " + " ".join(t.binary for t in TOOLS.values()) + "; do "
    'if p=$(command -v "$t"); then printf \'%s\\t%s\\n\' "$t" "$(readlink -f "$p")"; '
    "else printf '%s\\t-\\n' \"$t\"; fi; done"
)


def which(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for no, line in enumerate(text.splitlines(), 1):
        name, sep, path = line.partition("\t")
        if not sep or not path:
            raise ParseError("command -v", "expected binary<TAB>path", line_no=no, line=line)
        out[name] = None if path == "-" else path
    missing = [t.binary for t in TOOLS.values() if t.binary not in out]
    if missing:
        raise ParseError("command -v", f"no line for {', '.join(missing)}")
    return out


@prefetches
def commands(node: NodeExpect) -> list[str]:
    return [WHICH, DPKG]


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_tool(node: NodeExpect, probe: Probe, tool: str) -> None:
    t, fix = TOOLS[tool], hint("benchmarks", node.name)
    pin = node.pins["benchmarks"].get(tool)
    if not isinstance(pin, dict):
        raise CheckError(f"the plan has no software.{tool} pin: re-plan the spec with this clusterforge")
    version, method = str(pin["version"]), str(pin.get("install", "package"))
    path = probe.parse(WHICH, which)[t.binary]
    if path is None:
        raise CheckError(
            f"cannot certify: {t.binary} missing ({t.dir} {version}, install {method}, is not on PATH); {fix}"
        )
    prefix = str(node.knobs.get("benchmarks_prefix", PREFIX)).rstrip("/")
    if method == "package":
        name = str(pin.get("package") or "")
        if not name:
            raise CheckError(f"the plan names no package for {tool}: re-plan the spec with this clusterforge")
        found = probe.parse(DPKG, readers.dpkg_list).get(name)
        expect(
            found is not None and readers.upstream_version(found) == version,
            f"{t.dir} package {name}",
            version,
            found or "not installed",
            fix,
        )
        expect(
            not path.startswith(prefix + "/"),
            f"{t.binary} on PATH",
            f"the binary of package {name}",
            f"{path} (left from an artifact/source install)",
            fix,
        )
        return
    want = f"{prefix}/{t.dir}-{version}/"
    expect(path.startswith(want), f"{t.binary} on PATH ({method})", f"{want}bin/{t.binary}", path, fix)
