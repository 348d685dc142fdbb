"""What a burn-in run is made of: its options, one iteration's measurements, the plan extract stored with the
run, and its verdicts from what the database holds. The flow that drains, iterates, records and acts on the
pool is `clusterforge.flows.burnin`.

A burn-in run (`burnin_runs.id`, the RUN of `--resume RUN` and of `clusterforge report burnin RUN`) is
worked on by one or more *sessions*: each invocation is a records run of kind `burnin` holding the node
lock. A killed session leaves its records run `running` until the next one reclaims the lock (the records
mark it `incomplete`); `--resume RUN` starts a new session at the first iteration not committed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from clusterforge.burnin import issue, pairs, suite
from clusterforge.burnin.analysis import AnalysisConfig
from clusterforge.burnin.execute import Executor, Launcher
from clusterforge.burnin.model import Measurement
from clusterforge.burnin.verdicts import Evaluation, evaluate
from clusterforge.records.burnin import BurninDB

Say = Callable[[str], None]


@dataclass
class Options:
    iterations: int | None = None
    duration_s: float | None = None
    suite: suite.SuiteOptions = field(default_factory=suite.SuiteOptions)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    group_size: int = 8
    launcher: str = "slurm"  # slurm | mpirun | none
    slurm_mpi: str = "none"
    jobs: int = 8
    drain_timeout_s: float = 3600.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": asdict(self.suite),
            "analysis": self.analysis.as_dict(),
            "group_size": self.group_size,
            "launcher": self.launcher,
            "slurm_mpi": self.slurm_mpi,
            "jobs": self.jobs,
        }

    @classmethod
    def from_stored(cls, d: Mapping[str, Any], iterations: int | None, duration_s: float | None) -> Options:
        st = dict(d.get("suite") or {})
        st["counters"] = tuple(st.get("counters") or suite.SuiteOptions().counters)
        st.setdefault("storage", False)  # a run stored before burn-in measured storage keeps its shape
        return cls(
            iterations,
            duration_s,
            suite.SuiteOptions(**st),
            AnalysisConfig.from_dict(d.get("analysis") or {}),
            int(d.get("group_size", 8)),
            str(d.get("launcher", "slurm")),
            str(d.get("slurm_mpi", "none")),
            int(d.get("jobs", 8)),
        )


@dataclass
class Outcome:
    burnin_id: str
    run_id: str
    evaluation: Evaluation
    actions: dict[str, str]
    iterations: int

    @property
    def exit_code(self) -> int:
        return 0 if self.evaluation.passed else 3


def done(db: BurninDB, burnin_id: str, opts: Options) -> bool:
    if opts.iterations is not None:
        return db.next_iteration(burnin_id) > opts.iterations
    return db.elapsed_s(burnin_id) >= float(opts.duration_s or 0)


def measure_iteration(
    ex: Executor,
    plan_doc: Mapping[str, Any],
    expects: Mapping[str, Any],
    names: list[str],
    opts: Options,
    launcher: Launcher | None,
) -> list[Measurement]:
    """Everything one iteration measures: single-node suites (parallel), pair rounds, groups."""
    ex.connect(names)
    samples = ex.suites([expects[n] for n in names], opts.suite)
    out = [m for n in names for m in samples[n].measurements]
    chosen = pairs.select_pairs(plan_doc, names)
    out += ex.pairs(pairs.schedule(chosen), expects, opts.suite)
    if launcher is not None:
        groups = pairs.allreduce_groups(plan_doc, opts.group_size, names)
        out += ex.groups(groups, launcher, lambda n: int(expects[n].gpu["count"]), opts.suite)
    return out


def plan_extract(plan_doc: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """What the verdicts and the report need of the plan, for the nodes of one burn-in: their entries, SKUs,
    and cabling (node-leaf cables, and the uplinks of their leaves)."""
    keep = set(names)
    nodes = [n for n in plan_doc["nodes"] if n["name"] in keep]
    leaves = {r["leaf"] for n in nodes for r in n["rails"]}
    fabrics = []
    for f in plan_doc.get("fabrics", []):
        links = [
            x
            for x in pairs.links_of(f)
            if (x.kind == "node-leaf" and x.a_dev in keep) or (x.kind == "leaf-spine" and x.a_dev in leaves)
        ]
        fabrics.append(
            {
                "name": f["name"],
                "type": f.get("type"),
                "link_fields": ["kind", "a_dev", "a_port", "b_dev", "b_port"],
                "links": [[x.kind, x.a_dev, x.a_port, x.b_dev, x.b_port] for x in links],
            }
        )
    return {
        "cluster": plan_doc["cluster"],
        "plan_hash": plan_doc.get("plan_hash"),
        "target": plan_doc.get("target"),
        "certification": plan_doc.get("certification") or {},
        "nodes": nodes,
        "skus": {n["sku"]: plan_doc["skus"][n["sku"]] for n in nodes},
        "fabrics": fabrics,
    }


def evaluation_of(bdb: BurninDB, burnin_id: str) -> Evaluation:
    """Verdicts from what the database holds (the plan extract stored with the run, every iteration)."""
    stored = bdb.get(burnin_id)
    opts = Options.from_stored(stored.options, stored.target_iterations, stored.duration_s)
    rows = bdb.measurements(burnin_id)
    chosen = pairs.select_pairs(stored.plan, stored.nodes)
    return evaluate(rows, stored.plan, stored.nodes, chosen, opts.analysis, issue.serials(rows))
