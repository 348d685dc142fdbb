"""Fuzzing the spec loader and planner (issue 16): mutated example specs end in a plan or in exit code 2.

A hypothesis-driven mutator starts from inventory/clusters/*.yaml and changes values (types, unicode,
shell/markup/template metacharacters, sizes), keys, and the YAML text itself (anchors and aliases, tags,
merge keys, deep nesting, alias bombs, duplicate keys, control characters, truncation). Every example must
either plan (and render every output) or raise `InputError` (exit 2) whose report prints on one line per
problem without control characters — never another exception — within a per-example time limit, and the
process's peak memory must stay bounded. The profile is fixed and derandomized, so CI runs the same cases.
"""

from __future__ import annotations

import copy
import io
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rich.console import Console

from clusterforge.errors import InputError
from clusterforge.plan import build_plan
from clusterforge.plan.inventory import all_vars, sku_vars
from clusterforge.plan.outputs import (
    bom_csv,
    cables_csv,
    dump_yaml,
    hosts_yml_lines,
    plan_json_text,
    write_outputs,
)
from clusterforge.plan.topology_svg import topology_dot
from clusterforge.spec import load_spec_text
from clusterforge.term import error_line

from ._helpers import CLUSTERS
from .test_spec_hostile import BOMB

BASES = {p.stem: p.read_text(encoding="utf-8") for p in sorted(CLUSTERS.glob("*.yaml"))}
DATA = {k: yaml.safe_load(v) for k, v in BASES.items()}
SECONDS_PER_EXAMPLE = 10.0  # generous for a loaded CI machine; a bounded loader takes well under 1 s
PEAK_RSS_GROWTH_KIB = 600 * 1024  # the bomb alone took more than 5 GB

FUZZ = settings(
    max_examples=120,
    derandomize=True,
    database=None,
    deadline=None,  # timed explicitly below: hypothesis' deadline is flaky on a shared machine
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

METACHARS = [
    "; id", "$(id -un)", "`id`", "\n", "\r\n", "\x1b[31m", "\x1b]0;title\x07", "[/x]", "[bold red]",
    "{{ 7*7 }}", "{% raw %}", "{index[0]}", "{foo}", "{index:999999d}", "{index.real}", "../../etc/passwd",
    "\x00", "\u202e",
    "\u2028", "\x85", "'", '"', "\\", "|", "&", "*", "> /tmp/x", "%s%n", "\t", " ", "¥", "𝟘", "ﬁ", "İ", "é",
    "mlx5_0", "0000:18:00.0", "eth0", "10.0.0.1:443", "[::1]:1", "r{index:02d}", "gpu-{index:04d}", "-",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 2, -1, 20000, 20001, 10**6]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=24),
    st.sampled_from(METACHARS),
    st.builds(
        lambda a, b, c: a + b + c, st.text(max_size=6), st.sampled_from(METACHARS), st.text(max_size=6)
    ),
    st.sampled_from(["2", "true", "1.5", "2024-01-01", "a" * 300, "x" * 20_000]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)


# Fields whose values reach names, files, commands or templates: mutated directly as well as at random.
TARGETS: list[tuple[str | int, ...]] = [
    ("metadata", "name"), ("metadata", "description"), ("pools", 0, "naming"), ("pools", 0, "count"),
    ("pools", 0, "sku"), ("pools", 0, "name"), ("site", "name"), ("site", "racks", "naming"),
    ("site", "racks", "count"), ("fabrics", "compute", 0, "switch", "model"),
    ("fabrics", "compute", 0, "su_size"),
    ("software", "rdma", "version"), ("software", "nic_firmware"), ("tuning", "tuned_profile"),
    ("tuning", "time_servers", 0), ("tuning", "hugepages", "count"), ("skus", 0), ("rollout", "serial"),
    ("certification", "validity_hours"), ("addressing", "reserved"),
]  # fmt: skip
NAMINGS = [
    "{index[0]}", "{foo}", "{index:999999999d}", "{index.real}", "{}", "{0}", "{index!s}", "{index:,}",
    "{index:x}", "{index:_>9}", "{index:07d}", "{{index}}", "n{index}{index}", "{index:%}", "{index:{w}}",
]  # fmt: skip
targeted = st.one_of(st.sampled_from(NAMINGS), st.sampled_from(METACHARS), values)


def _set_path(doc: Any, path: tuple[str | int, ...], value: Any) -> None:
    cur = doc
    for k in path[:-1]:
        if (isinstance(cur, dict) and k in cur) or (
            isinstance(cur, list) and isinstance(k, int) and k < len(cur)
        ):
            cur = cur[k]
        else:
            return
    if isinstance(cur, dict) or (isinstance(cur, list) and isinstance(path[-1], int) and path[-1] < len(cur)):
        cur[path[-1]] = value


def _walk(doc: Any, data: st.DataObject) -> tuple[Any, Any]:
    """A random (container, key) inside `doc`: descend a random number of steps from the root."""
    parent: Any = None
    key: Any = None
    cur = doc
    for _ in range(data.draw(st.integers(0, 6), label="depth")):
        if isinstance(cur, dict) and cur:
            k = data.draw(st.sampled_from(sorted(cur, key=str)), label="key")
        elif isinstance(cur, list) and cur:
            k = data.draw(st.integers(0, len(cur) - 1), label="index")
        else:
            break
        parent, key, cur = cur, k, cur[k]
    return parent, key


def _mutate_data(doc: Any, data: st.DataObject) -> None:
    if data.draw(st.booleans(), label="targeted"):
        _set_path(doc, data.draw(st.sampled_from(TARGETS), label="target"), data.draw(targeted, label="to"))
        return
    parent, key = _walk(doc, data)
    if parent is None:
        return
    op = data.draw(st.sampled_from(["replace", "delete", "add", "wrap", "grow"]), label="op")
    if op == "replace":
        parent[key] = data.draw(values, label="value")
    elif op == "delete":
        del parent[key]
    elif op == "add" and isinstance(parent, dict):
        parent[data.draw(st.sampled_from([*METACHARS, "naming", "count", "x" * 100]), label="new key")] = (
            data.draw(values, label="new value")
        )
    elif op == "wrap":
        parent[key] = [parent[key]] if data.draw(st.booleans()) else {"x": parent[key]}
    elif op == "grow" and isinstance(parent[key], list) and parent[key]:
        parent[key] = parent[key] * data.draw(st.sampled_from([2, 50, 2000]), label="times")


_VALUE_LINE = re.compile(r"(?m)^( *(?:- )?[A-Za-z_][\w-]*: )(\S.*)$")


def _mutate_text(text: str, data: st.DataObject) -> str:
    """YAML-level mutations on the dumped text."""
    op = data.draw(
        st.sampled_from(["none", "anchor", "tag", "merge", "nest", "bomb", "dup", "chars", "truncate"]),
        label="text",
    )
    lines = [m for m in _VALUE_LINE.finditer(text)]
    if op == "none" or not lines:
        return text
    m = data.draw(st.sampled_from(lines), label="line")
    head, value = m.group(1), m.group(2)
    if op == "anchor":
        other = data.draw(st.sampled_from(lines), label="alias line")
        text = text[: m.start()] + f"{head}&anc {value}" + text[m.end() :]
        if other.start() > m.end():  # an alias after its anchor; before it, an undefined alias (exit 2)
            delta = len("&anc ")
            text = text[: other.start() + delta] + other.group(1) + "*anc" + text[other.end() + delta :]
        return text
    if op == "tag":
        tag = data.draw(
            st.sampled_from(["!!timestamp", "!!binary", "!!set", "!foo", "!!python/object/apply:os.system",
                             "!!str", "!!int", "!!float", "!!bool", "!!null", "!!omap", "!"]), label="tag"
        )  # fmt: skip
        return text[: m.start()] + f"{head}{tag} {value}" + text[m.end() :]
    if op == "merge":
        indent = " " * (len(head) - len(head.lstrip()))
        return "defaults: &d {x: 1}\n" + text[: m.start()] + f"{indent}<<: *d\n" + text[m.start() :]
    if op == "nest":
        n = data.draw(st.sampled_from([5, 70, 2000]), label="nesting")
        return text[: m.start()] + head + "[" * n + "]" * n + text[m.end() :]
    if op == "bomb":
        return BOMB + text
    if op == "dup":
        return text[: m.start()] + m.group(0) + "\n" + text[m.start() :]
    if op == "chars":
        at = data.draw(st.integers(0, len(text)), label="at")
        return (
            text[:at] + data.draw(st.sampled_from(METACHARS) | st.text(max_size=4), label="chars") + text[at:]
        )
    at = data.draw(st.integers(0, len(text)), label="cut")
    return text[:at]


def _outcome(text: str, out_dir: Path | None = None) -> int:
    """0 when `text` plans and every output renders, 2 when it is refused with a clean report; anything
    else (another exception, a slow example, an unprintable report) fails the test."""
    t0 = time.perf_counter()
    try:
        plan = build_plan(load_spec_text(text, "fuzz.yaml"))
        plan_json_text(plan)
        list(hosts_yml_lines(plan))
        dump_yaml(all_vars(plan))
        for sku in plan.doc["skus"].values():
            dump_yaml(sku_vars(sku))
        cables_csv(plan)
        bom_csv(plan)
        topology_dot(plan)
        if out_dir is not None:
            write_outputs(plan, out_dir, svg=False)
        code = 0
    except InputError as exc:
        assert exc.exit_code == 2 and exc.problems
        report = exc.render()
        assert all(line.isprintable() for line in report.split("\n")), report
        buf = io.StringIO()
        Console(file=buf, width=200).print(error_line("error", exc), highlight=False, soft_wrap=True)
        assert "\x1b" not in buf.getvalue()
        code = 2
    assert time.perf_counter() - t0 < SECONDS_PER_EXAMPLE
    return code


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_the_unmutated_examples_plan() -> None:
    with tempfile.TemporaryDirectory() as d:
        for name, text in BASES.items():
            assert _outcome(text, Path(d)) == 0, name


@FUZZ
@given(st.data())
def test_mutated_specs_plan_or_exit_2(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from(sorted(DATA)), label="base")
    doc = copy.deepcopy(DATA[base])
    for _ in range(data.draw(st.sampled_from([0, 1, 1, 1, 2, 3]), label="mutations")):
        _mutate_data(doc, data)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=data.draw(st.booleans(), label="unicode"))
    text = _mutate_text(text, data)
    before = _peak_rss_kib()
    with tempfile.TemporaryDirectory() as d:
        event(f"exit {_outcome(text, Path(d))}")
    assert _peak_rss_kib() - before < PEAK_RSS_GROWTH_KIB


MAIN = "import sys; from clusterforge.cli import main; sys.argv = ['clusterforge', *sys.argv[1:]]; main()"


@settings(FUZZ, max_examples=3)
@given(st.data())
def test_mutated_specs_through_the_cli(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from(["lab", "h100-ib-1su"]), label="base")
    doc = copy.deepcopy(DATA[base])
    _mutate_data(doc, data)
    text = _mutate_text(yaml.safe_dump(doc, sort_keys=False), data)
    with tempfile.TemporaryDirectory() as d:
        spec = Path(d) / "spec.yaml"
        spec.write_text(text, encoding="utf-8")
        env = {**os.environ, "COLUMNS": "200"}
        env.pop("CLUSTERFORGE_DEBUG", None)
        r = subprocess.run(
            [sys.executable, "-c", MAIN, "plan", str(spec), "--out", str(Path(d) / "out"), "--no-svg"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert r.returncode in (0, 2), r.stderr
        assert "Traceback" not in r.stderr and "\x1b" not in r.stderr
        assert (Path(d) / "out").exists() == (r.returncode == 0)
