"""A node's job for the node checker and the answer it sends back, whatever engine carries them: one Slurm
job step (`certify/slurm_step.py`) or one Kubernetes Job per node (`certify/k8s_jobs.py`).

The job document is data (the plan cut to the job's nodes, their role knobs, what to read of each node's
applied state); the answer is the node's validator records and applied-state read, filed by the same
reader as an SSH run's. The checks that read BMCs (Redfish with the BMC account, which never goes to a
node) run on the controller instead, one pytest process per BMC_CHUNK nodes.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge import assets
from clusterforge.certify.plugin import BMC
from clusterforge.certify.results import CheckResult, NodeResult, read_results
from clusterforge.certify.runner import PYTEST_ENV, NodeRun, run_node
from clusterforge.plan.expect import group_vars
from clusterforge.remote.checker_node import JOB_VERSION
from clusterforge.remote.node_state import KEYS as STATE_KEYS
from clusterforge.remote.node_state import parse as parse_state


def checker_path(plan_node: Mapping[str, Any]) -> str:
    """Where the monitoring role installs the node checker (the node's desired state)."""
    try:
        return str(plan_node["desired"]["monitoring"]["checker"]["path"])
    except (KeyError, TypeError):
        raise KeyError(
            f"plan.json's desired state of {plan_node.get('name')} names no node checker "
            "(a plan compiled before it did): re-run `clusterforge plan`"
        ) from None


Names = Mapping[str, Iterable[str]]  # what to read of a node's applied state (clusterforge.remote.node_state)


def job_document(
    plan_doc: Mapping[str, Any],
    inventory: Path,
    nodes: Sequence[str],
    marker: str,
    states: Mapping[str, Names] | None = None,
) -> bytes:
    """The job every task of the step reads: the plan with only these nodes, their role knobs, and what to
    read of each node's applied state (`states`, for drift)."""
    wanted = set(nodes)
    entries = [n for n in plan_doc["nodes"] if n["name"] in wanted]
    cache: dict[Path, dict[str, Any]] = {}
    knobs = {n["name"]: group_vars(inventory, n, cache) for n in entries}
    plan = {**plan_doc, "nodes": entries}
    doc: dict[str, Any] = {"version": JOB_VERSION, "marker": marker, "plan": plan, "knobs": knobs}
    asked = {n: names for n, names in (states or {}).items() if n in wanted}
    if asked:
        doc["state"] = {
            n: {k: sorted(map(str, names.get(k, ()))) for k in STATE_KEYS} for n, names in asked.items()
        }
    return json.dumps(doc, sort_keys=True, default=str).encode()


@dataclass
class StepAnswer:
    """What a step brought back: each node's check results, and each asked node's applied-state read
    (`states`: the state document, or `state_errors`: why there is none)."""

    results: dict[str, NodeResult] = field(default_factory=dict)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    state_errors: dict[str, str] = field(default_factory=dict)
    #: nodes the engine brought nothing back for (not started, no output; not a torn answer, not a
    #: cancelled run): their `results` are step errors, and a flow may read them over SSH instead
    unanswered: set[str] = field(default_factory=set)

    def file(
        self, node: str, res: NodeResult, state: dict[str, Any] | None, state_error: str, asked: bool
    ) -> None:
        """One node's answer: its results and, when its applied state was `asked` for, the read or why
        there is none (never silently nothing)."""
        self.results[node] = res
        if not asked:
            return
        if state is not None:
            self.states[node] = state
        else:
            self.state_errors[node] = state_error or "the node checker sent no applied-state read"


def step_error(node: str, why: str, check_id: str, via: str, fix: str) -> NodeResult:
    """A node that gave no answer through `via`: one `check_id` error, never a verdict on its settings."""
    check = CheckResult(
        node,
        check_id,
        "error",
        f"{node}: not checked through {via}: {why}",
        expected=f"the node checker's answer from {via}",
        found=why,
        fix=fix.format(node=node),
    )
    return NodeResult(node, [check], complete=False, note=f"incomplete: {via}: {why}")


#: the BMC checks run here in processes of this many nodes, this many at once: each check is a Redfish
#: round trip (I/O), so thousands of nodes are not one long serial run
BMC_CHUNK = 256
BMC_PARALLEL = 8


def controller_checks(
    inventory: Path,
    nodes: list[str],
    marker: str,
    workdir: Path,
    deadline_s: float,
    env: Mapping[str, str] | None,
    cancel: threading.Event | None,
) -> tuple[dict[str, list[CheckResult]], dict[str, str]]:
    """The `bmc` checks of `marker` for every node, from here (no SSH: they read the BMCs), one pytest
    process per BMC_CHUNK nodes; (results per node, why a node's part of them is incomplete)."""
    chunks = [nodes[i : i + BMC_CHUNK] for i in range(0, len(nodes), BMC_CHUNK)]
    out: dict[str, list[CheckResult]] = {}
    notes: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(BMC_PARALLEL, len(chunks)))) as ex:
        done = ex.map(
            lambda ic: _bmc_chunk(inventory, ic[1], marker, workdir / f"controller-bmc-{ic[0]}.jsonl",
                                  deadline_s, env, cancel),
            enumerate(chunks),
        )  # fmt: skip
        for got, note, members in done:
            out.update(got)
            notes.update(dict.fromkeys(members, note) if note else {})
    return out, notes


def _bmc_chunk(
    inventory: Path,
    nodes: list[str],
    marker: str,
    results: Path,
    deadline_s: float,
    env: Mapping[str, str] | None,
    cancel: threading.Event | None,
) -> tuple[dict[str, list[CheckResult]], str, list[str]]:
    argv = [
        sys.executable, "-m", "pytest", str(assets.validators()), "-m", f"({marker}) and {BMC}",
        "--plan", str(inventory / "plan.json"), "--hosts", ",".join(f"ssh://{n}" for n in nodes),
        "--cf-results", str(results), "-q", "--no-header", "-p", "no:cacheprovider",
        "-p", "testinfra.plugin", "--tb=no", "-rN",
    ]  # fmt: skip
    run = NodeRun("controller", results, deadline_s)
    run_node(argv, run, None, cancel, PYTEST_ENV | dict(env or {}))
    out: dict[str, list[CheckResult]] = {}
    ended = False
    text = results.read_text(encoding="utf-8", errors="replace") if results.exists() else ""
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("kind") == "end":
            ended = True
        elif rec.get("kind") == "check" and rec.get("node") in nodes:
            out.setdefault(str(rec["node"]), []).append(CheckResult.from_record(rec))
    if run.killed:
        return out, f"the BMC checks run here: {run.killed}", nodes
    if not ended:
        code = run.proc.returncode if run.proc else "?"
        return out, f"the BMC checks run here ended early (exit {code})", nodes
    return out, "", nodes


def read_answer(
    path: Path, node: str, payload: bytes, check_id: str, fix: str
) -> tuple[NodeResult, dict[str, Any] | None, str]:
    """The node's records as the SSH runs leave them (one file, read by the same reader); its applied-state
    read (checked for shape by the SSH path's reader) or why there is none."""
    path.write_bytes(payload)
    res = read_results(path, node)
    errors = []
    state: dict[str, Any] | None = None
    state_error = ""
    for line in payload.decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("kind") == "checker_error":
            errors.append(str(rec.get("message", "")))
        elif isinstance(rec, dict) and rec.get("kind") == "node_state":
            try:
                state = parse_state(json.dumps(rec.get("state")))
            except ValueError as exc:
                state_error = f"state read {rec.get('error') or f'output unreadable: {exc}'}"
    if errors:
        res.complete = False
        res.checks.append(
            CheckResult(
                node,
                check_id,
                "error",
                f"{node}: the node checker could not run: {errors[0]}",
                expected="the validators run on the node",
                found=errors[0],
                fix=fix.format(node=node),
            )
        )
        res.note = f"incomplete: node checker: {errors[0]}"
    return res, state, state_error
