"""From every iteration's measurements to findings and node verdicts (pure; statistics in `analysis`).

Order of reasoning (docs/burnin.md): per-unit statistics in hardware-class fleets → node-level findings
(GPU, NIC, whole node) → counter growth (ECC, link errors) → pair localisation using the node-level
findings as evidence → multi-node groups, explained by node findings when they can be.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from clusterforge.burnin import analysis as A
from clusterforge.burnin import storage
from clusterforge.burnin.model import COUNTER_PREFIX, PERF_TESTS, TESTS, Finding, Measurement, NodeVerdict
from clusterforge.burnin.pairs import Pair

UnitKey = tuple[str, str, str, str]  # (test, node, component, peer)
SHORT = {
    "nvbandwidth.h2d": "nvbandwidth h2d",
    "nvbandwidth.d2h": "nvbandwidth d2h",
    "nvbandwidth.d2d": "nvbandwidth d2d",
    "ib_write_bw.loopback": "ib_write_bw",
    "ib_write_bw.pair": "ib_write_bw pair",
    "all_reduce.node": "all_reduce",
    "all_reduce.group": "all_reduce group",
    "fio.seq_read": "fio seq read",
    "fio.seq_write": "fio seq write",
}


@dataclass
class Evaluation:
    nodes: dict[str, NodeVerdict]
    fabric: list[Finding]
    units: dict[UnitKey, A.UnitStats]
    classes: dict[UnitKey, str]
    series: dict[UnitKey, list[tuple[int, float | None]]]
    config: A.AnalysisConfig
    suspects: list[A.Suspect] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.fabric and all(v.verdict == "pass" for v in self.nodes.values())


class Plan:
    """Lookups into the plan document that the verdicts need."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc
        self.nodes = {n["name"]: n for n in doc["nodes"]}

    def sku(self, node: str) -> Mapping[str, Any]:
        sku: Mapping[str, Any] = self.doc["skus"][self.nodes[node]["sku"]]
        return sku

    def rail(self, node: str, index: int) -> Mapping[str, Any]:
        return next(r for r in self.nodes[node]["rails"] if int(r["index"]) == index)

    def hardware_class(
        self, test: str, node: str, peer: str = "", kind: str = "", component: str = ""
    ) -> str:
        ref = peer.split(",")[0] if test == "all_reduce.group" else node
        if test in storage.TESTS:
            return storage.fleet_class(test, component, self.nodes[node]["sku"])
        sku = self.sku(ref)
        gpu = f"{sku['gpu']['model']} x{sku['gpu']['count']}"
        if test.startswith("ib_write_bw"):
            nic = sku["compute_nics"]
            cls = f"{test} | {nic['model']} {nic['speed_gbps']}G {nic['link_layer']}"
            return f"{cls} | {kind}" if kind else cls
        if test == "all_reduce.group":
            return f"{test} | {gpu} | {len(peer.split(','))} nodes"
        return f"{test} | {gpu}"

    def floor(self, test: str, node: str, component: str = "") -> float | None:
        if test in storage.TESTS:
            return storage.floor(self.nodes[node], test, component)
        key = TESTS.get(test, ("", None, ""))[1]
        t = self.sku(node).get("thresholds", {}).get(key) if key else None
        return float(t["value"]) if isinstance(t, dict) and "value" in t else None


def component_label(plan: Plan, node: str, component: str, serials: Mapping[str, Mapping[str, str]]) -> str:
    if component.startswith("gpu"):
        i = component[3:]
        serial = (serials.get(node) or {}).get(f"gpu{i}")
        return f"GPU {i}" + (f" (serial {serial})" if serial else "")
    if component.startswith("rail"):
        r = plan.rail(node, int(component[4:]))
        return f"rail {r['index']} NIC {r['hca']}"
    if component.startswith(storage.PREFIX):
        return storage.label(plan.nodes[node], component)
    return "node"


def cable_label(plan: Plan, node: str, rail: int) -> str:
    r = plan.rail(node, rail)
    return f"rail {rail} link {r['hca']} <-> {r['leaf']}:{r['leaf_port']}"


def collect(
    rows: Iterable[tuple[int, Measurement]],
) -> tuple[dict[UnitKey, list[tuple[int, Measurement]]], list[int]]:
    units: dict[UnitKey, list[tuple[int, Measurement]]] = defaultdict(list)
    its: set[int] = set()
    for it, m in rows:
        units[m.key].append((it, m))
        its.add(it)
    for v in units.values():
        v.sort(key=lambda x: x[0])
    return dict(units), sorted(its)


def evaluate(
    rows: Iterable[tuple[int, Measurement]],
    plan_doc: Mapping[str, Any],
    nodes: Sequence[str],
    pairs: Sequence[Pair] = (),
    cfg: A.AnalysisConfig | None = None,
    serials: Mapping[str, Mapping[str, str]] | None = None,
) -> Evaluation:
    cfg = cfg or A.AnalysisConfig()
    plan, serials = Plan(plan_doc), serials or {}
    rows = list(rows)
    units, _its = collect((it, m) for it, m in rows if not m.unmeasured)
    missing = _unmeasured(rows, nodes)
    pair_kind = {(p.a, p.b, p.rail): p.kind for p in pairs}
    classes: dict[UnitKey, str] = {}
    for key in units:
        test, node, comp, peer = key
        if test in PERF_TESTS:
            kind = pair_kind.get((node, peer, int(comp[4:])), "") if test == "ib_write_bw.pair" else ""
            classes[key] = plan.hardware_class(test, node, peer, kind, comp)
    stats: dict[UnitKey, A.UnitStats] = {}
    for cls in sorted(set(classes.values())):
        members = {
            k: (
                [float(m.value) for _, m in units[k] if m.ok and m.value is not None],
                sum(1 for _, m in units[k] if not m.ok),
            )
            for k, c in classes.items()
            if c == cls
        }
        stats.update(A.fleet_stats(members, cfg))
    series = {k: [(it, m.value if m.ok else None) for it, m in v] for k, v in units.items()}
    findings: dict[str, list[Finding]] = defaultdict(list)
    fabric: list[Finding] = [f for f in missing.get("", [])]
    evidence: dict[tuple[str, int], str] = {}

    def perf_finding(key: UnitKey) -> Finding | None:
        test, node, comp, peer = key
        s = stats[key]
        if test in storage.TESTS and not storage.judged_on_variation(comp):
            s = replace(s, variable=False)
        floor = plan.floor(test, node if test != "all_reduce.group" else peer.split(",")[0], comp)
        why = A.bad_reason(s, cfg, floor, TESTS[test][0], "storage" if test in storage.TESTS else "SKU")
        if why is None:
            return None
        kind = (
            "failed"
            if s.failures > cfg.max_failures
            else "low"
            if s.low
            else "threshold"
            if floor is not None and s.level is not None and s.level < floor
            else "variable"
        )
        return Finding(
            node,
            component_label(plan, node, comp, serials),
            kind,
            test,
            f"{_word(kind)} {node} {component_label(plan, node, comp, {})} {SHORT[test]} {why}",
            s.level,
            s.fleet_median,
            TESTS[test][0],
            {"unit": list(key), "cv": s.cv, "z": s.z},
        )

    for key in sorted(stats):
        test, node, comp, _peer = key
        if test in ("ib_write_bw.pair", "all_reduce.group"):
            continue
        f = perf_finding(key)
        if f is None:
            continue
        findings[node].append(f)
        if test == "ib_write_bw.loopback":
            evidence[(node, int(comp[4:]))] = f.summary
    _node_level_allreduce(findings)
    _dcgm(units, plan, serials, findings)
    _counters(units, plan, cfg, serials, findings, evidence)
    outcomes = []
    for p in pairs:
        key = ("ib_write_bw.pair", p.a, f"rail{p.rail}", p.b)
        if key in stats:
            f = perf_finding(key)
            outcomes.append(A.PairOutcome(p, f.summary if f else None))
    suspects = A.localise_pairs(outcomes, evidence)
    for s in suspects:
        _suspect_findings(s, plan, findings, fabric)
    for key in sorted(k for k in stats if k[0] == "all_reduce.group"):
        f = perf_finding(key)
        if f is None:
            continue
        group_nodes = key[3].split(",")
        if not any(findings.get(m) for m in group_nodes):
            fabric.append(
                Finding(
                    "",
                    f"group {key[3]}",
                    "group",
                    key[0],
                    f"{f.summary}: no member node explains it",
                    f.value,
                    f.fleet,
                    f.unit,
                    {"members": group_nodes},
                )
            )
    verdicts = {}
    for n in nodes:
        seen = [m for k, v in units.items() if k[1] == n for _, m in v]
        # fail only on what was measured; a tool that was missing, crashed or hung makes the node `error`
        # and suspects nothing
        verdict = (
            "fail"
            if findings.get(n)
            else ("error" if missing.get(n) or not any(m.ok for m in seen) else "pass")
        )
        its = {it for it, m in rows if m.node == n}
        found = sorted(_dedup(findings.get(n, [])), key=_priority) + missing.get(n, [])
        verdicts[n] = NodeVerdict(n, verdict, found, len(its))
    return Evaluation(verdicts, fabric, stats, classes, series, cfg, suspects)


def _unmeasured(rows: Sequence[tuple[int, Measurement]], nodes: Sequence[str]) -> dict[str, list[Finding]]:
    """One finding per node and tool that measured nothing (missing: kind ``missing``; crashed, timed out,
    output cut short: kind ``not-run``), with no component; a group test's, whose node is unknown, under
    the key ``""`` (fabric)."""
    seen: dict[tuple[str, str, str], Finding] = {}
    count: dict[tuple[str, str, str], int] = defaultdict(int)
    known = set(nodes)
    for it, m in rows:
        tool = m.unmeasured
        if not tool:
            continue
        on = str(m.detail.get("on") or m.node)
        on = on if on in known else ""
        kind = "missing" if m.missing else "not-run"
        key = (on, tool, kind)
        count[key] += 1
        if key not in seen:
            seen[key] = Finding(
                on,
                "",
                kind,
                m.test,
                m.error.split(": ", 1)[1] if m.error.startswith(f"{on}: ") else m.error,
                evidence={
                    "tool": tool,
                    "install": m.detail.get("install"),
                    "first_iteration": it,
                    "tests": [],
                },
            )
        if m.test not in seen[key].evidence["tests"]:
            seen[key].evidence["tests"].append(m.test)
    out: dict[str, list[Finding]] = defaultdict(list)
    for (on, _tool, _kind), f in sorted(seen.items()):
        f.evidence["measurements"] = count[(on, _tool, _kind)]
        out[on].append(f)
    return dict(out)


def _priority(f: Finding) -> tuple[int, int]:
    """Most specific first (it becomes the drain reason): a component out of its fleet, counters, pairs,
    DCGM, tests that could not run, whole-node all_reduce last."""
    kind = {
        "low": 0,
        "threshold": 1,
        "variable": 2,
        "ecc": 3,
        "link-errors": 3,
        "link": 4,
        "dcgm": 5,
        "ambiguous": 6,
        "failed": 7,
    }.get(f.kind, 8)
    return (kind + (10 if f.test == "all_reduce.node" else 0), 0)


def _word(kind: str) -> str:
    return {"low": "outlier", "variable": "unstable", "threshold": "below floor", "failed": "failed"}.get(
        kind, kind
    )


def _dedup(items: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in items:
        k = (f.component, f.kind, f.test, f.evidence.get("pair"))
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out


def _node_level_allreduce(findings: dict[str, list[Finding]]) -> None:
    """A node's all_reduce finding points at the GPUs its other findings name, when there are some."""
    for _node, items in findings.items():
        gpus = [f.component for f in items if f.component.startswith("GPU")]
        for i, f in enumerate(items):
            if f.test == "all_reduce.node":
                comp = gpus[0] if gpus else "GPUs / NVLink / NVSwitch"
                items[i] = Finding(
                    f.node,
                    comp,
                    f.kind,
                    f.test,
                    f.summary.replace(" node ", f" {comp} ", 1),
                    f.value,
                    f.fleet,
                    f.unit,
                    f.evidence,
                )


def _dcgm(
    units: Mapping[UnitKey, list[tuple[int, Measurement]]],
    plan: Plan,
    serials: Mapping[str, Mapping[str, str]],
    findings: dict[str, list[Finding]],
) -> None:
    for (test, node, _c, _p), rows in sorted(units.items()):
        if test != "dcgm.diag":
            continue
        failed: dict[str, set[int]] = defaultdict(set)
        errors = [m.error for _, m in rows if not m.ok]
        for _, m in rows:
            for name, gpus in (m.detail.get("failed") or {}).items():
                failed[name].update(int(g) for g in gpus)
        for name, gpus in sorted(failed.items()):
            comp = (
                component_label(plan, node, f"gpu{min(gpus)}", serials)
                if len(gpus) == 1
                else "GPU " + ",".join(map(str, sorted(gpus)))
                if gpus
                else "GPU(s)"
            )
            findings[node].append(
                Finding(
                    node,
                    comp,
                    "dcgm",
                    test,
                    f"dcgm diag {name} failed on {node} {comp}",
                    evidence={"test": name},
                )
            )
        if errors:
            findings[node].append(
                Finding(
                    node,
                    "node",
                    "failed",
                    test,
                    f"failed {node} dcgmi diag in {len(errors)} iterations: {errors[0][:80]}",
                )
            )


def _counters(
    units: Mapping[UnitKey, list[tuple[int, Measurement]]],
    plan: Plan,
    cfg: A.AnalysisConfig,
    serials: Mapping[str, Mapping[str, str]],
    findings: dict[str, list[Finding]],
    evidence: dict[tuple[str, int], str],
) -> None:
    for (test, node, comp, _p), rows in sorted(units.items()):
        values = [m.value for _, m in rows if m.ok and m.value is not None]
        if len(values) < 2:
            continue
        grew = A.growth(values)
        if test in ("ecc.corrected", "ecc.uncorrected"):
            limit = cfg.ecc_corrected_growth if test == "ecc.corrected" else 1
            if grew >= limit:
                label = component_label(plan, node, comp, serials)
                what = "degrading GPU memory" if test == "ecc.corrected" else "uncorrectable memory errors"
                findings[node].append(
                    Finding(
                        node,
                        label,
                        "ecc",
                        test,
                        f"ecc {node} {label} {test.split('.')[1]} ECC +{grew:.0f} during burn-in ({what})",
                        grew,
                        None,
                        "count",
                    )
                )
        elif test.startswith(COUNTER_PREFIX):
            name = test[len(COUNTER_PREFIX) :]
            link_limit = cfg.link_counter_growth.get(name)
            if link_limit is not None and grew >= link_limit:
                rail = int(comp[4:])
                label = cable_label(plan, node, rail)
                summary = f"link errors {node} {label} {name} +{grew:.0f} (cable or transceiver)"
                findings[node].append(Finding(node, label, "link-errors", test, summary, grew, None, "count"))
                evidence.setdefault((node, rail), summary)


def _suspect_findings(
    s: A.Suspect, plan: Plan, findings: dict[str, list[Finding]], fabric: list[Finding]
) -> None:
    ev = {"pairs": list(s.pairs), "rail": s.rail, "fabric": s.fabric}
    if s.scope == "node":
        return  # already a node finding (loopback, link counters): the pairs only confirm it
    if s.scope == "link":
        label = cable_label(plan, s.target, s.rail)
        findings[s.target].append(
            Finding(
                s.target, label, "link", "ib_write_bw.pair", f"pairs {s.target} {label}: {s.why}", evidence=ev
            )
        )
        return
    if s.scope in ("leaf", "path"):
        fabric.append(
            Finding(
                "",
                f"{s.scope} {s.target}",
                s.scope,
                "ib_write_bw.pair",
                f"{s.scope} {s.target} rail {s.rail}: {s.why}",
                evidence=ev,
            )
        )
        return
    a, b = s.target.split(":")[0].split("~")
    for n, other in ((a, b), (b, a)):
        label = cable_label(plan, n, s.rail)
        findings[n].append(
            Finding(
                n,
                label,
                "ambiguous",
                "ib_write_bw.pair",
                f"pair {n} {label} with {other}: {s.why}",
                evidence=ev | {"pair": s.target},
            )
        )
