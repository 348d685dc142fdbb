"""Graphviz picture of the compute fabrics: every switch and node for one or two SUs, SU blocks beyond."""

from __future__ import annotations

from collections import Counter

from clusterforge.plan.build import Plan
from clusterforge.plan.fabric import Fabric

DETAIL_MAX_SU = 2


def _q(s: str) -> str:
    return '"' + s.replace('"', r"\"") + '"'


def _fabric_detail(f: Fabric, out: list[str]) -> None:
    by_role: dict[str, list[str]] = {"core": [], "spine": [], "leaf": []}
    for s in f.switches:
        by_role[s.role].append(s.name)
    for role, names in by_role.items():
        if names:
            out.append(f"  {{ rank=same; {' '.join(_q(n) for n in names)} }}")
            shape = {"core": "box3d", "spine": "box", "leaf": "box"}[role]
            color = {"core": "#7b2cbf", "spine": "#1d4ed8", "leaf": "#0f766e"}[role]
            for n in names:
                out.append(
                    f"  {_q(n)} [shape={shape}, style=filled, fillcolor={_q(color)}, fontcolor=white];"
                )
    pairs: Counter[tuple[str, str]] = Counter()
    nodes: set[str] = set()
    for link in f.links:
        pairs[(link.a_dev, link.b_dev)] += 1
        if link.kind == "node-leaf":
            nodes.add(link.a_dev)
    for n in sorted(nodes):
        out.append(f'  {_q(n)} [shape=component, style=filled, fillcolor="#f1f5f9"];')
    for (a, b), k in sorted(pairs.items()):
        label = f" [label={_q(f'x{k}')}]" if k > 1 else ""
        out.append(f"  {_q(a)} -- {_q(b)}{label};")


def _fabric_summary(f: Fabric, out: list[str]) -> None:
    """SU-level picture: one block per SU (its leaves), spine pods and core groups as blocks."""
    tops = "cores" if f.tiers == 3 else "spines"
    top_n = f.cores if f.tiers == 3 else f.spines
    out.append(f"  {_q(f.name + ' ' + tops)} [shape=box3d, label={_q(f'{top_n} {tops}')}];")
    if f.tiers == 3:
        out.append(f"  {_q(f.name + ' spines')} [shape=box, label={_q(f'{f.spines} spines in pods')}];")
        out.append(f"  {_q(f.name + ' spines')} -- {_q(f.name + ' cores')};")
    up = f.name + (" spines")
    for su in range(f.scalable_units):
        present = min(f.su_size, f.nodes - su * f.su_size)  # the last SU may be partly populated
        label = f"SU {su + 1}\\n{f.rails} leaves\\n{present} nodes"
        out.append(f"  {_q(f'{f.name} su{su + 1}')} [shape=folder, label={_q(label)}];")
        out.append(f"  {_q(f'{f.name} su{su + 1}')} -- {_q(up)};")


def topology_dot(plan: Plan) -> str:
    out = [
        "graph clusterforge {",
        "  graph [rankdir=BT, splines=false, nodesep=0.15, ranksep=1.2, fontname=Helvetica];",
        "  node [fontname=Helvetica, fontsize=10];",
        '  edge [color="#64748b"];',
    ]
    for i, f in enumerate(plan.fabrics.values()):
        title = (
            f"{f.name}: {f.kind}, {f.tiers} tiers, {f.leaves} leaf / {f.spines} spine / {f.cores} core, "
            f"{f.nodes} nodes, bisection {f.bisection_gbps / 1000:g} Tb/s"
        )
        out.append(f"  subgraph cluster_{i} {{ label={_q(title)};")
        if f.scalable_units <= DETAIL_MAX_SU:
            _fabric_detail(f, out)
        else:
            _fabric_summary(f, out)
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"
