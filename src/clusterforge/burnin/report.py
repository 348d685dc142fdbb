"""`clusterforge report burnin RUN`: one self-contained HTML page (inline PNG figures, inline CSS and a few
lines of inline script, no external asset) or JSON, from what the records database holds."""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from clusterforge.burnin import pairs, plots
from clusterforge.burnin.model import TESTS, unit_of
from clusterforge.burnin.runner import evaluation_of
from clusterforge.burnin.verdicts import Evaluation
from clusterforge.records.burnin import BurninDB, BurninRun

READY = "clusterforge-burnin-report-ready"
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#212121}h1{font-size:20px}
h2{font-size:17px;margin-top:28px}table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5;cursor:pointer}tr.fail td.v{color:#c62828;font-weight:600}tr.pass td.v{color:#2e7d32}
tr.error td.v{color:#ef6c00}.muted{color:#757575}img{max-width:100%}code{background:#f5f5f5;padding:0 3px}
.bad{color:#c62828}section.node{border-top:1px solid #eee;padding-top:8px}
"""
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, col) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) { return a.cells[col].textContent.localeCompare(b.cells[col].textContent); });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
console.log("%READY%: " + document.querySelectorAll("tr.fail").length + " failed node(s)");
""".replace("%READY%", READY)


def report_data(bdb: BurninDB, burnin_id: str) -> tuple[BurninRun, Evaluation, dict[str, Any]]:
    run = bdb.get(burnin_id)
    ev = evaluation_of(bdb, run.id)
    chosen = pairs.select_pairs(run.plan, run.nodes)
    cov = pairs.coverage(run.plan, chosen, run.nodes)
    units = []
    for key, s in sorted(ev.units.items()):
        test, node, comp, peer = key
        units.append(
            {
                "test": test,
                "node": node,
                "component": comp,
                "peer": peer,
                "class": ev.classes.get(key),
                "unit": unit_of(test),
                "level": s.level,
                "cv": s.cv,
                "z": s.z,
                "fleet_median": s.fleet_median,
                "fleet_size": s.fleet_size,
                "low": s.low,
                "variable": s.variable,
                "samples": s.samples,
                "failures": s.failures,
                "series": ev.series.get(key, []),
            }
        )
    doc = {
        "burnin_id": run.id,
        "cluster": run.cluster,
        "plan_hash": run.plan_hash,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "nodes": run.nodes,
        "target": {"iterations": run.target_iterations, "duration_s": run.duration_s},
        "iterations": bdb.iterations(run.id),
        "sessions": bdb.sessions(run.id),
        "options": run.options,
        "passed": ev.passed,
        "verdicts": {n: v.as_dict() for n, v in ev.nodes.items()},
        "fabric": [f.as_dict() for f in ev.fabric],
        "coverage": cov.as_dict(),
        "pairs": [{"fabric": p.fabric, "rail": p.rail, "a": p.a, "b": p.b, "kind": p.kind} for p in chosen],
        "actions": (run.summary or {}).get("actions", {}),
        "units": units,
    }
    return run, ev, doc


def to_json(bdb: BurninDB, burnin_id: str) -> str:
    return json.dumps(report_data(bdb, burnin_id)[2], indent=1, sort_keys=True, default=str)


def _flagged(ev: Evaluation) -> set[tuple[str, str, str, str]]:
    out = {k for k, s in ev.units.items() if s.low or s.variable or s.failures}
    for v in ev.nodes.values():
        for f in v.findings:
            key = f.evidence.get("unit")
            if key:
                out.add((str(key[0]), str(key[1]), str(key[2]), str(key[3])))
    return out


def to_html(bdb: BurninDB, burnin_id: str, max_node_plots: int = 64) -> str:
    run, ev, doc = report_data(bdb, burnin_id)
    e = html.escape
    flagged = _flagged(ev)
    out = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        f"<title>burn-in {e(run.id)}</title><style>{CSS}</style></head><body>",
        f'<h1>Burn-in {e(run.id)} — {e(run.cluster)} — <span class="{"muted" if ev.passed else "bad"}">'
        f"{'passed' if ev.passed else 'FAILED' if run.status != 'running' else 'running'}</span></h1>",
        f'<p class="muted">{len(run.nodes)} nodes · {len(doc["iterations"])} iterations committed'
        f" in {len(doc['sessions'])} session(s) · plan {e(str(run.plan_hash)[:12])}"
        f" · started {e(run.created_at)}"
        f" · robust z limit {ev.config.z_max:g}, MAD floor {100 * ev.config.mad_floor:g} %, CV limit "
        f"{100 * ev.config.cv_max:g} %</p>",
    ]
    out.append(
        '<h2>Verdicts</h2><table class="sortable" id="verdicts"><thead><tr><th>node</th><th>verdict</th>'
        "<th>iterations</th><th>suspected components</th><th>findings</th><th>pool</th></tr></thead><tbody>"
    )
    for n, v in sorted(ev.nodes.items(), key=lambda x: (x[1].verdict == "pass", x[0])):
        finds = "<br>".join(e(f.summary) for f in v.findings) or '<span class="muted">none</span>'
        out.append(
            f'<tr class="{v.verdict}" data-node="{e(n)}"><td><a href="#node-{e(n)}">{e(n)}</a></td>'
            f'<td class="v">{v.verdict}</td><td>{v.iterations}</td><td>{e(", ".join(v.components)) or "-"}'
            f"</td><td>{finds}</td><td>{e(str(doc['actions'].get(n, '')))}</td></tr>"
        )
    out.append("</tbody></table>")
    if ev.fabric:
        out.append(
            "<h2>Fabric findings</h2><ul>"
            + "".join(f'<li class="bad">{e(f.summary)}</li>' for f in ev.fabric)
            + "</ul>"
        )
    cov = doc["coverage"]
    out.append(
        f"<h2>Pair coverage</h2><p>{len(doc['pairs'])} pair tests per iteration · leaves {e(cov['leaves'])}"
        f" · node-leaf cables {e(cov['node_leaf_cables'])}</p>"
    )
    out += [f'<p class="muted">{e(n)}</p>' for n in cov["notes"]]
    out.append(
        '<h2>Fleets</h2><p class="muted">Each dot is one unit\'s median over iterations; the dashed '
        "line is the fleet median, the dotted red line the outlier limit; red units are flagged.</p>"
    )
    by_class: dict[str, dict[Any, Any]] = defaultdict(dict)
    for k, cls in ev.classes.items():
        by_class[cls][k] = ev.units[k]
    for cls, members in sorted(by_class.items()):
        test = cls.split(" | ")[0]
        uri = plots.fleet_box(cls, TESTS[test][0], members, flagged, ev.config.z_max)
        out.append(f'<img alt="{e(cls)}" src="{uri}">')
    out.append("<h2>Nodes</h2>")
    order = sorted(ev.nodes, key=lambda n: (ev.nodes[n].verdict == "pass", n))
    shown = [n for i, n in enumerate(order) if i < max_node_plots or ev.nodes[n].verdict != "pass"]
    for n in shown:
        out.append(
            f'<section class="node" id="node-{e(n)}"><h3>{e(n)} — {ev.nodes[n].verdict}</h3>'
            f'<img alt="{e(n)}" src="{plots.node_figure(n, ev.series, flagged)}"></section>'
        )
    if len(shown) < len(order):
        out.append(
            f'<p class="muted">{len(order) - len(shown)} passing nodes not drawn (--max-node-plots).</p>'
        )
    out.append(_iterations_table(doc))
    out.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(out)


def _iterations_table(doc: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{i['iteration']}</td><td>{html.escape(i['started_at'])}</td>"
        f"<td>{i['duration_s']:.1f}</td><td><code>{html.escape(i['run_id'][:8])}</code></td></tr>"
        for i in doc["iterations"]
    )
    return (
        "<h2>Iterations</h2><table><thead><tr><th>iteration</th><th>started</th><th>seconds</th>"
        f"<th>session</th></tr></thead><tbody>{rows}</tbody></table>"
    )
