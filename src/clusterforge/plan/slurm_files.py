"""Slurm files rendered from the plan: `gres.conf` and `topology.conf` (in the plan layer, so the inventory
carries them to the slurm_node role; `pool/slurm_conf.py` re-exports them).

topology.conf (topology/tree) for a rail-optimized fat tree: every node of a scalable unit (SU) is
cabled to the same set of rail leaves (one leaf per rail), so the SU is the smallest group with a
one-switch path on every rail. Slurm's tree wants each node under exactly one leaf switch, so the
leaf level is one switch per SU, named `<fabric>-su<N>` (a comment lists its real rail leaves).
Above it: two-tier fabrics get one `<fabric>-spine` switch over all SUs; three-tier fabrics get a
`<fabric>-block<B>` switch per block of SUs that share a pod on every rail, and `<fabric>-core` above.
Separate fabrics stay separate trees: Slurm then never places one job across two fabrics.

topology.conf (topology/block) for clusters whose SKU has a multi-node NVLink domain (`nvlink_domain`, e.g.
GB200 NVL72: 18 nodes, one rack): one `BlockName=<rack>-nvl<j> Nodes=<hostlist>` per domain, the pool's
nodes in index order cut into domains (the spec checks keep each in one rack). No `BlockSizes=`: Slurm then
takes the first block's node count as the base block and aggregates 1, 2, 4 and 8 blocks (block_record.c,
SchedMD/slurm src/plugins/topology/block), which is what whole domains want. One topology.conf is one plugin,
so a cluster is all domain SKUs (block) or none (tree); the spec rejects a Slurm cluster that mixes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_NUM = re.compile(r"^(.*?)(\d+)$")


def hostlist(names: Iterable[str]) -> str:
    """Compress node names to a Slurm hostlist: `gpu-0001..gpu-0032,gpu-0040` → `gpu-[0001-0032,0040]`.

    Zero-padded numbers keep their width (`gpu-[0999-1000]`); plain ones merge (`su[1-16]`).
    """
    parsed: list[tuple[str, str] | str] = []
    padded: set[tuple[str, int]] = set()
    for name in dict.fromkeys(names):
        m = _NUM.match(name)
        if not m:
            parsed.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        if len(digits) > 1 and digits.startswith("0"):
            padded.add((prefix, len(digits)))
        parsed.append((prefix, digits))
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for item in parsed:
        if isinstance(item, str):
            order.append(item)
            continue
        prefix, digits = item
        key = (prefix, len(digits)) if (prefix, len(digits)) in padded else (prefix, 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    out: list[str] = []
    for entry in order:
        if isinstance(entry, str):
            out.append(entry)
            continue
        prefix, width = entry
        nums = sorted(set(groups[entry]))
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        ranges: list[str] = []
        start = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


def gpu_type(sku: Mapping[str, Any]) -> str:
    """The GRES type of a SKU's GPUs: its architecture-free model word, e.g. `h100`, `b200`, `a100`."""
    name = str(sku.get("name", ""))
    word = name.split("-", 1)[0].lower()
    return re.sub(r"[^a-z0-9_]", "_", word) or "gpu"


def node_gres(plan_doc: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """The `Gres=` value of a node's slurm.conf line, e.g. `gpu:h100:8`."""
    sku = plan_doc["skus"][node["sku"]]
    return f"gpu:{gpu_type(sku)}:{int(sku['gpu']['count'])}"


def _gpu_cores(sku: Mapping[str, Any]) -> dict[int, str]:
    """GPU index → `Cores=` range of its NUMA node (from the SKU's rail table), when the SKU says."""
    cpu = sku.get("cpu") or {}
    numa_nodes = int(cpu.get("numa_nodes") or 0)
    total = int(cpu.get("sockets") or 0) * int(cpu.get("cores_per_socket") or 0)
    if numa_nodes <= 0 or total <= 0 or total % numa_nodes:
        return {}
    per = total // numa_nodes
    out: dict[int, str] = {}
    for rail in (sku.get("compute_nics") or {}).get("rails", []):
        if rail.get("gpu") is not None and rail.get("numa") is not None:
            numa = int(rail["numa"])
            out[int(rail["gpu"])] = f"{numa * per}-{(numa + 1) * per - 1}"
    return out


def _header(name: str, plan_doc: Mapping[str, Any]) -> str:
    """The first comment line of a rendered Slurm file: cluster and plan it was rendered from."""
    return (
        f"# {name} for cluster {plan_doc['cluster']}, rendered by clusterforge from plan "
        f"{str(plan_doc.get('plan_hash', ''))[:12]}; edits are overwritten."
    )


def render_gres_conf(plan_doc: Mapping[str, Any]) -> str:
    """gres.conf: one line per GPU per SKU group, `File=/dev/nvidiaN`, `Cores=` of the GPU's NUMA node."""
    lines = [
        _header("gres.conf", plan_doc),
        "# slurm.conf needs GresTypes=gpu and, per node, Gres=gpu:<type>:<count> (see docs/pool.md).",
        "AutoDetect=off",
    ]
    by_sku: dict[str, list[str]] = {}
    for n in plan_doc["nodes"]:
        by_sku.setdefault(n["sku"], []).append(n["name"])
    for sku_name in sorted(by_sku):
        sku = plan_doc["skus"][sku_name]
        count = int(sku["gpu"]["count"])
        cores = _gpu_cores(sku)
        hosts = hostlist(by_sku[sku_name])
        lines.append(f"# {sku_name}: {count} x {sku['gpu'].get('model', 'GPU')}")
        for i in range(count):
            core = f" Cores={cores[i]}" if i in cores else ""
            lines.append(f"NodeName={hosts} Name=gpu Type={gpu_type(sku)} File=/dev/nvidia{i}{core}")
    return "\n".join(lines) + "\n"


def _switch_rows(fabric: Mapping[str, Any]) -> list[dict[str, Any]]:
    fields = list(fabric.get("switch_fields") or ["name", "role", "su", "rail", "pod", "group", "position"])
    return [dict(zip(fields, row, strict=False)) for row in fabric.get("switches", [])]


def _domain_nodes(plan_doc: Mapping[str, Any], node: Mapping[str, Any]) -> int:
    """Nodes per NVLink domain of the node's SKU (0: the SKU has none)."""
    sku = (plan_doc.get("skus") or {}).get(node.get("sku")) or {}
    dom = sku.get("nvlink_domain") or {}
    return int(dom.get("nodes") or 0)


def topology_plugin(plan_doc: Mapping[str, Any]) -> str:
    """slurm.conf's `TopologyPlugin=` for the plan's topology.conf: `topology/block` when every node's SKU
    has an NVLink domain, `topology/tree` when none has. Raises ValueError for a mix (one file, one
    plugin)."""
    kinds = {_domain_nodes(plan_doc, n) > 0 for n in plan_doc["nodes"]}
    if kinds == {True, False}:
        raise ValueError(
            "the plan mixes SKUs with and without NVLink domains: one topology.conf cannot be both "
            "topology/block and topology/tree"
        )
    return "topology/block" if kinds == {True} else "topology/tree"


def nvlink_blocks(plan_doc: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(block name, node names) per NVLink domain: each pool's domain nodes, in plan order, cut into runs of
    the domain size; named `<rack of its first node>-nvl<j>`, j counting the domains of that rack."""
    by_pool: dict[str, list[Mapping[str, Any]]] = {}
    for n in plan_doc["nodes"]:
        if _domain_nodes(plan_doc, n):
            by_pool.setdefault(n["pool"], []).append(n)
    out: list[tuple[str, list[str]]] = []
    in_rack: dict[str, int] = {}
    for members in by_pool.values():
        size = _domain_nodes(plan_doc, members[0])
        for k in range(0, len(members), size):
            chunk = members[k : k + size]
            rack = str(chunk[0]["rack"])
            in_rack[rack] = in_rack.get(rack, 0) + 1
            out.append((f"{rack}-nvl{in_rack[rack]}", [str(n["name"]) for n in chunk]))
    return out


def render_topology_conf(plan_doc: Mapping[str, Any]) -> str:
    """topology.conf: topology/block (one block per NVLink domain) when the plan's SKUs have NVLink domains,
    else topology/tree from `nodes[].su`, `nodes[].rails[].leaf` and `fabrics[]`."""
    if topology_plugin(plan_doc) == "topology/block":
        return _render_block(plan_doc)
    lines = [
        _header("topology.conf", plan_doc),
        "# slurm.conf: TopologyPlugin=topology/tree. A leaf switch here is one scalable unit (SU): its",
        "# nodes share one leaf per rail, listed in the comment above it.",
    ]
    nodes_by_fabric: dict[str, list[Mapping[str, Any]]] = {}
    for n in plan_doc["nodes"]:
        nodes_by_fabric.setdefault(n["fabric"], []).append(n)
    for fabric in plan_doc.get("fabrics", []):
        fname = fabric["name"]
        members = nodes_by_fabric.get(fname, [])
        if not members:
            continue
        sus: dict[int, list[Mapping[str, Any]]] = {}
        for n in members:
            sus.setdefault(int(n["su"]), []).append(n)
        lines.append(
            f"# fabric {fname} ({fabric.get('type', '?')}, {fabric.get('tiers', '?')} tiers, {len(sus)} SU)"
        )
        su_switch = {su: f"{fname}-su{su}" for su in sorted(sus)}
        for su in sorted(sus):
            leaves = sorted({r["leaf"] for n in sus[su] for r in n.get("rails", []) if r.get("leaf")})
            if leaves:
                lines.append(f"# {su_switch[su]} rail leaves: {', '.join(leaves)}")
            lines.append(f"SwitchName={su_switch[su]} Nodes={hostlist(n['name'] for n in sus[su])}")
        if int(fabric.get("tiers", 2)) >= 3:
            lines += _three_tier(fabric, sus, su_switch)
        else:
            lines.append(f"SwitchName={fname}-spine Switches={hostlist(su_switch.values())}")
    return "\n".join(lines) + "\n"


def _render_block(plan_doc: Mapping[str, Any]) -> str:
    lines = [
        _header("topology.conf", plan_doc),
        "# slurm.conf: TopologyPlugin=topology/block (a Slurm release that ships topology_block.so). A block",
        "# is one multi-node NVLink domain (the SKU's nvlink_domain); Slurm aggregates neighbouring blocks.",
    ]
    for name, nodes in nvlink_blocks(plan_doc):
        lines.append(f"BlockName={name} Nodes={hostlist(nodes)}")
    return "\n".join(lines) + "\n"


def _three_tier(
    fabric: Mapping[str, Any], sus: Mapping[int, list[Mapping[str, Any]]], su_switch: Mapping[int, str]
) -> list[str]:
    """Blocks of SUs that share a pod on every rail (pod = block x rails + rail), then the core."""
    fname, rails = fabric["name"], max(int(fabric.get("rails") or 1), 1)
    leaf_pod = {s["name"]: s.get("pod") for s in _switch_rows(fabric) if s.get("role") == "leaf"}
    block_of: dict[int, int] = {}
    for su, members in sus.items():
        pods = {leaf_pod.get(r["leaf"]) for n in members for r in n.get("rails", [])}
        pods.discard(None)
        blocks = {int(p) // rails for p in pods if p is not None}
        block_of[su] = min(blocks) if blocks else 0
    by_block: dict[int, list[str]] = {}
    for su in sorted(sus):
        by_block.setdefault(block_of[su], []).append(su_switch[su])
    lines = [
        f"SwitchName={fname}-block{b} Switches={hostlist(names)}" for b, names in sorted(by_block.items())
    ]
    lines.append(
        f"SwitchName={fname}-core Switches={hostlist(f'{fname}-block{b}' for b in sorted(by_block))}"
    )
    return lines


def healthcheck_conf_lines(plan_doc: Mapping[str, Any]) -> list[str]:
    """slurm.conf lines that make the node-side health check (`clusterforge.health.nodecheck`, installed by
    the monitoring role at each node's `desired.monitoring.health.path`) Slurm's HealthCheckProgram.

    CYCLE spreads the runs over the interval; ANY runs it on busy nodes too (a drain lets their jobs end).
    Raises ValueError when the nodes disagree on the path or interval (slurm.conf has one of each)."""
    seen = {
        (str(h["path"]), int(h["interval_s"]))
        for n in plan_doc["nodes"]
        if (h := ((n.get("desired") or {}).get("monitoring") or {}).get("health"))
    }
    if not seen:
        return []
    if len(seen) > 1:
        raise ValueError(f"the nodes' health checks differ in path or interval: {sorted(seen)}")
    path, interval = seen.pop()
    return [f"HealthCheckProgram={path}", f"HealthCheckInterval={interval}", "HealthCheckNodeState=ANY,CYCLE"]
