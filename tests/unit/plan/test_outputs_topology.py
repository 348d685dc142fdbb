"""topology.dot / .svg: every switch and node for one or two SUs, SU blocks (not nodes) beyond."""

from __future__ import annotations

import html
import re
import shutil

import pytest

from clusterforge.plan.outputs import render_svg
from clusterforge.plan.topology_svg import topology_dot


def _names(dot: str) -> set[str]:
    return set(re.findall(r'"([^"]+)" \[', dot))


def test_lab_shows_every_switch_and_node(example) -> None:
    p = example("lab")
    dot = topology_dot(p)
    switches = {s.name for f in p.fabrics.values() for s in f.switches}
    assert len(switches) == 24  # 2 fabrics x (8 leaves + 4 spines)
    assert _names(dot) == switches | {"roce-01", "roce-02", "ib-01", "ib-02"}
    assert '"roce-01" -- "roce0-leaf-su0-r0"' in dot
    assert '"roce0-leaf-su0-r0" -- "roce0-spine-p0-s0" [label="x8"]' in dot  # 32 uplinks over 4 spines


def test_two_sus_still_show_every_node(example) -> None:
    names = _names(topology_dot(example("h100-roce-2su")))
    assert {f"gpu-{i:04d}" for i in range(1, 65)} <= names
    assert "roce0-leaf-su1-r7" in names


def test_sixteen_sus_show_su_blocks_not_nodes(example) -> None:
    dot = topology_dot(example("b200-ib-16su"))
    names = _names(dot)
    assert {f"ib0 su{i}" for i in range(1, 17)} <= names
    assert "ib0 su17" not in names
    assert not any(n.startswith("gpu-") or "-leaf-" in n for n in names)
    assert '"64 cores"' in dot and "128 spines" in dot
    assert "SU 16\\n8 leaves\\n32 nodes" in dot


def test_partial_last_su_shows_its_nodes(plan_text, spec_text, edit) -> None:
    # 500 nodes in SUs of 32: 15 full SUs and a 16th with 20 nodes
    text = edit(spec_text("b200-ib-16su"), "    count: 512\n", "    count: 500\n")
    dot = topology_dot(plan_text(text))
    assert "SU 15\\n8 leaves\\n32 nodes" in dot and "SU 16\\n8 leaves\\n20 nodes" in dot


@pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (apt install graphviz)"
)
def test_svg_contains_the_names(example) -> None:
    lab = html.unescape(render_svg(topology_dot(example("lab"))))  # Graphviz writes '-' as &#45;
    assert all(f"<title>{n}</title>" in lab for n in ("roce-01", "ib-02", "ib0-spine-p0-s3"))
    big = html.unescape(render_svg(topology_dot(example("b200-ib-16su"))))
    assert "<title>ib0 su16</title>" in big and "gpu-0001" not in big
