"""Certification as a Slurm job step: every node runs the validators on itself, the controller reads
their answers from the step's stdout and judges them exactly as it judges its own SSH runs.

``srun -Z -N<k> -w <nodes> --ntasks-per-node=1 --input=all python3 -I -S <checker>``: one task per node,
the job (the plan cut to these nodes and each node's role knobs, `clusterforge.remote.checker_node`)
broadcast on stdin, each node's validator records framed on stdout (`clusterforge.remote.frames`).
`-Z` runs the step without a job allocation (root or SlurmUser only), so drained nodes are checked too,
as burn-in's steps are. Steps of at most STEP_NODES nodes, the job gzip'd. The controller's cost is the
`srun`s and the decoding; each node pays its own check (~2.6 CPU-s on a real H100 node, bench/README.md).

A node that does not answer — its slurmd is down, the checker is not installed, the step is cut short —
gets one `slurm.step` error naming why, never a verdict on its settings.

The checks that read the node's BMC (marker `bmc`: Redfish with the BMC account, which never goes to a
node) run here instead, one pytest process per BMC_CHUNK nodes, beside the steps.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge import assets
from clusterforge.certify.plugin import BMC
from clusterforge.certify.results import CheckResult, NodeResult, read_results
from clusterforge.certify.runner import PYTEST_ENV, NodeRun, run_node
from clusterforge.childenv import child_env
from clusterforge.plan.expect import group_vars
from clusterforge.remote.checker_node import JOB_VERSION
from clusterforge.remote.frames import decode
from clusterforge.remote.node_state import KEYS as STATE_KEYS
from clusterforge.remote.node_state import parse as parse_state

Progress = Callable[[str, str, dict[str, Any]], None]  # (node, event, data)
CHECK = "slurm.step"
FIX = (
    "install the node checker (clusterforge provision --tags checker, role monitoring), check that slurmd "
    "answers (`srun -w {node} true`), or certify this node over SSH (--via ssh)"
)


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


#: the tasks' whole environment (with Slurm's own SLURM_* variables): a login's PATH, nothing of this
#: process's (the target's BMC account, tokens) ever reaches a node
TASK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def srun_argv(nodes: Sequence[str], checker: str, srun: str = "srun") -> list[str]:
    return [
        srun,
        "-Z",
        f"-N{len(nodes)}",
        "-w",
        ",".join(nodes),
        "--ntasks-per-node=1",
        "--input=all",
        "--job-name=clusterforge-certify",
        f"--export=PATH={TASK_PATH}",
        "python3",
        "-I",  # isolated: no PYTHON* variables, no user site, no current directory on the path
        "-S",  # no site-packages of the node: only the program's own packages
        checker,
    ]


def step_error(
    node: str, why: str, check_id: str = CHECK, via: str = "a Slurm job step", fix: str = FIX
) -> NodeResult:
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


def _tail(path: Path, lines: int = 3) -> str:
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])[:400]


def _run(
    argv: list[str],
    job: Path,
    out: Path,
    err: Path,
    deadline_s: float,
    cancel: threading.Event | None,
    env: Mapping[str, str] | None,
) -> tuple[int | None, str]:
    """(srun's exit status, why it was stopped or could not start)."""
    with job.open("rb") as stdin, out.open("wb") as so, err.open("wb") as se:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=stdin,
                stdout=so,
                stderr=se,
                start_new_session=True,
                # srun's own: where its controller is (SLURM_CONF); the target's other values stay here
                env=child_env({k: v for k, v in (env or {}).items() if k.startswith("SLURM_")}),
            )
        except OSError as exc:
            return None, f"cannot run {argv[0]}: {exc}"
        end = time.monotonic() + deadline_s
        why = ""
        while proc.poll() is None:
            if cancel is not None and cancel.is_set():
                why = "cancelled"
            elif time.monotonic() > end:
                why = f"deadline of {deadline_s:.0f} s passed"
            if why:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)  # srun forwards it to every task
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.05)
        return proc.wait(), why


def certify_step(
    plan_doc: dict[str, Any],
    inventory: Path,
    nodes: list[str],
    marker: str,
    workdir: Path,
    deadline_s: float,
    *,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    srun: str = "srun",
) -> dict[str, NodeResult]:
    """Each node's result of one job step over `nodes` (plan order kept)."""
    return run_step(
        plan_doc, inventory, nodes, marker, workdir, deadline_s,
        env=env, progress=progress, cancel=cancel, srun=srun,
    ).results  # fmt: skip


def run_step(
    plan_doc: dict[str, Any],
    inventory: Path,
    nodes: list[str],
    marker: str,
    workdir: Path,
    deadline_s: float,
    *,
    states: Mapping[str, Names] | None = None,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    srun: str = "srun",
) -> StepAnswer:
    """One job step over `nodes`: their check results (plan order kept) and, for the nodes `states` names,
    their applied-state reads."""
    answer = StepAnswer()
    if not nodes:
        return answer
    start = time.monotonic()
    by_name = {n["name"]: n for n in plan_doc["nodes"]}
    out = answer.results
    groups: dict[str, list[str]] = {}
    for node in nodes:
        try:
            groups.setdefault(checker_path(by_name[node]), []).append(node)
        except KeyError as exc:
            out[node] = step_error(node, str(exc.args[0]))
            answer.state_errors[node] = str(exc.args[0])
    workdir.mkdir(parents=True, exist_ok=True)
    job = Job(plan_doc, inventory, marker, states or {}, workdir, deadline_s, env, cancel, srun)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="certify-bmc") as ex:
        here = ex.submit(
            controller_checks, inventory, sorted(n for g in groups.values() for n in g), marker, workdir,
            deadline_s, env, cancel,
        )  # fmt: skip
        _steps(job, groups, progress, answer)
        bmc, bmc_notes = here.result()
    for node, res in out.items():
        if node in bmc:
            res.checks += bmc[node]
        if node in bmc_notes:
            res.complete, res.note = False, f"incomplete: {bmc_notes[node]}"
        res.seconds = time.monotonic() - start
        if progress:
            progress(node, "done", {"verdict": res.verdict, "status": res.status_word})
    answer.results = {n: out[n] for n in nodes if n in out}
    return answer


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


@dataclass(frozen=True)
class Job:
    """One run's step inputs (shared by its steps, one per checker path)."""

    plan_doc: dict[str, Any]
    inventory: Path
    marker: str
    states: Mapping[str, Names]
    workdir: Path
    deadline_s: float
    env: Mapping[str, str] | None
    cancel: threading.Event | None
    srun: str


#: nodes per `srun`: the job document (~14 KB per node plus the plan's common part, gzip'd ~10x) is
#: broadcast to every task of a step, so one step over thousands of nodes would send each node everyone's
#: entries; steps of this many nodes, this many at once, keep that to a few MB per node
STEP_NODES = 128
STEP_PARALLEL = 4


def _steps(job: Job, groups: Mapping[str, list[str]], progress: Progress | None, answer: StepAnswer) -> None:
    """Steps of at most STEP_NODES nodes sharing a checker path, STEP_PARALLEL at once; answers into
    `answer` (written here, in this thread only)."""
    chunks = [
        (checker, members[i : i + STEP_NODES])
        for checker, members in sorted(groups.items())
        for i in range(0, len(members), STEP_NODES)
    ]
    for _, members in chunks:
        for node in members:
            if progress:
                progress(node, "connect", {})
    with ThreadPoolExecutor(max_workers=max(1, min(STEP_PARALLEL, len(chunks)))) as ex:
        done = list(ex.map(lambda ic: _one_step(job, ic[0], *ic[1]), enumerate(chunks)))
    for part in done:
        answer.results.update(part.results)
        answer.states.update(part.states)
        answer.state_errors.update(part.state_errors)


def _one_step(job: Job, i: int, checker: str, members: list[str]) -> StepAnswer:
    part = StepAnswer()
    on_node = f"({job.marker}) and not {BMC}"
    path = job.workdir / f"slurm-job-{i}.json.gz"
    doc = job_document(job.plan_doc, job.inventory, members, on_node, job.states)
    path.write_bytes(gzip.compress(doc, compresslevel=6, mtime=0))
    so, se = job.workdir / f"slurm-step-{i}.out", job.workdir / f"slurm-step-{i}.err"
    argv = srun_argv(members, checker, job.srun)
    code, stopped = _run(argv, path, so, se, job.deadline_s, job.cancel, job.env)
    answers, broken = decode(so.read_text(encoding="utf-8", errors="replace").splitlines())
    for node in members:
        if node in answers:
            res, state, state_error = read_answer(job.workdir / f"{node}.jsonl", node, answers[node])
            if stopped and not res.complete:
                res.note = f"incomplete: {stopped}"
        else:
            why = broken.get(node) or stopped or f"no answer (srun exit {code}: {_tail(se) or 'no message'})"
            res, state = step_error(node, why), None
            state_error = f"not answered in the Slurm step: {why}"
        part.file(node, res, state, state_error, node in job.states)
    return part


def read_answer(
    path: Path, node: str, payload: bytes, check_id: str = CHECK, fix: str = FIX
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
