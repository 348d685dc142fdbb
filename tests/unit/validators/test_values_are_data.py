"""Values are data: every command builder of the validators and burn-in gets metacharacter-laden values
(below the spec, which rejects them: NodeExpect built directly) and the commands are RUN by a real shell
with recording stand-ins for the tools. Each value must arrive as exactly the argument it was meant to be,
and nothing in a value may execute (a canary file that any injected `touch` would create)."""

from __future__ import annotations

import ast
import copy
import os
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clusterforge.burnin import suite
from clusterforge.certify.batch import batch_script, parse_batch
from clusterforge.certify.checks import wrap
from clusterforge.plan import Plan
from clusterforge.plan.expect import NodeExpect, node_expect
from clusterforge.remote import commands
from tests.conftest import REPO

from .conftest import VALIDATORS, validator

CANARY = "/tmp/cf-values-are-data-canary"
HOSTILE = [
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"a;touch {CANARY}",
    f"a|touch {CANARY}&",
    "q'uo\"te\\s",
    f"two\nlines;touch {CANARY}",
    "sp ace",
    "*",
    "[a-z]?",
    "-x --evil",
    "${HOME}",
    "~root",
    "a#b",
]
TOOLS = ["cat", "grep", "ip", "mlnx_qos", "systemctl", "ib_write_bw", "dcgmi", "nvbandwidth"]
TOOLS += ["all_reduce_perf", "nvidia-smi", "ibstat", "ibv_devinfo", "tuned-adm", "journalctl", "dmesg"]
TOOLS += ["ethtool"]


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stand-ins that write their argv (NUL-separated, count first) to $CF_LOG.<pid>, then run the real tool
    when there is one (cat, grep: the batch script needs them) or exit 0."""
    d = tmp_path_factory.mktemp("bin")
    for name in TOOLS:
        f = d / name
        f.write_text(
            "#!/bin/sh\n"
            '{ printf \'%s\\0\' "$#" "${0##*/}"; for a in "$@"; do printf \'%s\\0\' "$a"; done; }'
            ' >>"$CF_LOG.$$"\n'
            "PATH=$CF_REAL_PATH; export PATH\n"
            f'command -v {name} >/dev/null 2>&1 && exec {name} "$@"\n'
            "exit 0\n"
        )
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return d


def calls(log: Path) -> list[list[str]]:
    """[tool, arg...] per recorded call (one file per process: concurrent tools do not interleave)."""
    out = []
    for f in sorted(log.parent.glob(log.name + ".*")):
        parts, i = f.read_bytes().split(b"\0"), 0
        while i + 1 < len(parts):
            n = int(parts[i])
            record = [p.decode() for p in parts[i + 1 : i + 2 + n]]
            # a stand-in killed while writing (the ib_write_bw server the client's loop kills) leaves a cut
            # record: not a call as made, so not judged
            if len(record) == n + 1 and i + 2 + n < len(parts):
                out.append(record)
            i += n + 2
    return out


def run_sh(script: str, fake_bin: Path, log: Path, shell: str = "sh") -> subprocess.CompletedProcess[str]:
    real = os.environ["PATH"]
    env = dict(os.environ, PATH=f"{fake_bin}:{real}", CF_REAL_PATH=real, CF_LOG=str(log))
    return subprocess.run(
        [shell, "-s"] if shell == "bash" else [shell, "-c", script],
        input=script if shell == "bash" else None,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


@pytest.fixture
def clean() -> Any:
    Path(CANARY).unlink(missing_ok=True)
    yield
    assert not Path(CANARY).exists(), "a value was executed by a shell"


def hostile_node(lab_plan: Plan, value: str, gid: object = None) -> NodeExpect:
    """roce-01 with every rail's netdev, HCA and PCI address, the GID index and the QoS unit set to
    ``value`` (the spec would refuse them; the builders must not depend on that). Burn-in takes the GID
    index as an integer (``int()`` refuses anything else), so it gets ``gid``."""
    doc = copy.deepcopy(lab_plan.doc)
    entry = next(n for n in doc["nodes"] if n["name"] == "roce-01")
    entry["rails"] = [dict(r, netdev=value, hca=value, pci=value) for r in entry["rails"][:2]]
    knobs = {"nccl_ib_gid_index": value if gid is None else gid, "rdma_roce_qos_unit": value}
    return node_expect(doc, entry, knobs)


# -- the helpers themselves ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", HOSTILE)
def test_helpers_round_trip(value: str) -> None:
    assert shlex.split(commands.argv("tool", "-i", value, 3)) == ["tool", "-i", value, "3"]
    assert shlex.split(commands.shell("cat {} 2>/dev/null || echo {}", value, value)) == [
        "cat",
        value,
        "2>/dev/null",
        "||",
        "echo",
        value,
    ]
    assert shlex.split(commands.under(f"/sys/{value}", "counters/*")) == [f"/sys/{value}/counters/*"]


@pytest.mark.parametrize("pattern", ["$(id)", "a b", "x;y", "/abs/*", "`x`", "a'b"])
def test_under_refuses_anything_but_a_fixed_glob(pattern: str) -> None:
    with pytest.raises(ValueError):
        commands.under("/sys", pattern)


def test_shell_needs_one_value_per_hole() -> None:
    with pytest.raises(ValueError):
        commands.shell("cat {} {}", "x")
    with pytest.raises(TypeError):
        commands.argv("x", True)  # type: ignore[arg-type]


# -- every builder, run ----------------------------------------------------------------------------------
def validator_commands(node: NodeExpect) -> list[str]:
    """Every command the validators build for ``node``: the prefetch lists and the per-check builders."""
    rdma, perf, lc = validator("rdma"), validator("performance"), validator("link_counters")
    out: list[str] = []
    # the link-counters check's one `ethtool -S` of every RoCE rail netdev
    out.append(commands.ethtool_stats_cmd(list(lc.ethtool_ports(node, lc.rail_limits(node, 0)))))
    for area in ("rdma", "os_tuning", "nccl", "inventory", "gpu"):
        out += validator(area).commands(node)
    for r in node.rails:
        out += [rdma.qos_cmd(r), rdma.tos_cmd(r), *rdma.netdev_cmds(r), *rdma.gid_cmds(r, r.hca)]
        out.append(perf._ib_cmd(node, r.index))
    return out


@pytest.mark.parametrize("value", HOSTILE)
def test_validator_commands_keep_values_literal(
    lab_plan: Plan, value: str, fake_bin: Path, tmp_path: Path, clean: None
) -> None:
    node = hostile_node(lab_plan, value)
    cmds = validator_commands(node)
    log = tmp_path / "log"
    # as a check runs it: timeout + sh -c over ssh; a generous limit, so that a loaded machine never cuts a
    # stand-in off mid-record (a cut record once looked like an ib_write_bw call without -x)
    for c in cmds:
        run_sh(wrap(c, 120), fake_bin, log)
    got = calls(log)
    assert ["mlnx_qos", "-i", value] in got
    assert ["ip", "-o", "-4", "addr", "show", "dev", value] in got
    assert ["systemctl", "show", "-p", "UnitFileState,ActiveState,Result", value] in got
    assert ["cat", f"/sys/class/net/{value}/mtu"] in got
    assert ["grep", "-H", "-m1", "", f"/sys/class/infiniband/{value}/ports/1/counters/*"] in got
    assert ["ethtool", "-S", value] in got
    ib = [c for c in got if c[0] == "ib_write_bw"]
    assert ib and all(c[c.index("-d") + 1] == value and c[c.index("-x") + 1] == value for c in ib)
    # the batched prefetch: one script, every result back under its own command
    log = tmp_path / "batch"
    res = run_sh(batch_script(cmds, 120), fake_bin, log)
    assert res.returncode == 0, res.stderr
    assert len(parse_batch(res.stdout.encode(), len(cmds))) == len(cmds)
    assert ["mlnx_qos", "-i", value] in calls(log)


@pytest.mark.parametrize("value", HOSTILE)
def test_burnin_script_keeps_values_literal(
    lab_plan: Plan, value: str, fake_bin: Path, tmp_path: Path, clean: None
) -> None:
    node = hostile_node(lab_plan, value, gid=3)
    opts = suite.SuiteOptions(ib_sysfs=str(tmp_path / "ib"))
    text, _ = suite.script(node, opts)
    log = tmp_path / "log"
    res = run_sh(text, fake_bin, log, shell="bash")
    assert res.returncode == 0, res.stderr
    assert len(suite.split_sections(res.stdout)) == len(suite.steps(node, opts))
    got = calls(log)
    ib = [c for c in got if c[0] == "ib_write_bw"]
    assert len(ib) == 2 * len(node.rails) and all(c[c.index("-d") + 1] == value for c in ib)
    assert ["cat", f"{tmp_path}/ib/{value}/node_guid"] in got


@pytest.mark.parametrize("value", HOSTILE)
def test_pair_commands_keep_values_literal(lab_plan: Plan, value: str) -> None:
    node = hostile_node(lab_plan, value, gid=3)
    r = node.rails[0]
    words = ["ib_write_bw", *suite.ib_args(node, r, 18600, suite.SuiteOptions(), cuda=False), value]
    assert shlex.split(commands.argv(*words)) == [str(w) for w in words]


# -- nothing else builds shell text from values -------------------------------------------------------
PROBE_METHODS = {"run", "parse", "read", "read_many", "prefetch"}
SOURCES = [*sorted(VALIDATORS.glob("test_*.py")), REPO / "src/clusterforge/burnin/suite.py"]
SOURCES += [REPO / "src/clusterforge/burnin/execute.py"]


#: (file, expression) known to assemble text from constants only (none left)
KNOWN: set[tuple[str, str]] = set()


def _dynamic(node: ast.expr) -> bool:
    """An f-string, a `%`/`+` of strings, or a `.format(...)`: text assembled at run time."""
    if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_command_text_assembled_outside_the_helpers(path: Path) -> None:
    """The first argument of a probe call is a constant or a helper's result, never assembled text; a
    shell template is a literal; wrap() gets a helper's result."""
    bad = []
    for call in ast.walk(ast.parse(path.read_text())):
        if not isinstance(call, ast.Call) or not call.args:
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        first = call.args[0]
        if (path.name, ast.unparse(first)) in KNOWN:
            continue
        if name in PROBE_METHODS and name != "read" and _dynamic(first):
            bad.append(f"{path.name}:{call.lineno}: {name}() of assembled text")
        if name == "shell" and not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            bad.append(f"{path.name}:{call.lineno}: shell() template is not a literal")
        if name == "wrap" and _dynamic(first):
            bad.append(f"{path.name}:{call.lineno}: wrap() of assembled text")
    assert not bad, bad
