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
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge.certify.node_job import (
    Names,
    StepAnswer,
    checker_path,
    controller_checks,
    job_document,
    read_answer,
    step_error,
)
from clusterforge.certify.plugin import BMC
from clusterforge.certify.results import NodeResult
from clusterforge.childenv import child_env
from clusterforge.remote.frames import decode

Progress = Callable[[str, str, dict[str, Any]], None]  # (node, event, data)
CHECK = "slurm.step"
VIA = "a Slurm job step"
FIX = (
    "install the node checker (clusterforge provision --tags checker, role monitoring), check that slurmd "
    "answers (`srun -w {node} true`), or certify this node over SSH (--via ssh)"
)


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
            out[node] = step_error(node, str(exc.args[0]), CHECK, VIA, FIX)
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
        answer.unanswered |= part.unanswered


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
            res, state, state_error = read_answer(
                job.workdir / f"{node}.jsonl", node, answers[node], CHECK, FIX
            )
            if stopped and not res.complete:
                res.note = f"incomplete: {stopped}"
        else:
            why = broken.get(node) or stopped or f"no answer (srun exit {code}: {_tail(se) or 'no message'})"
            res, state = step_error(node, why, CHECK, VIA, FIX), None
            state_error = f"not answered in the Slurm step: {why}"
            if node not in broken and not (job.cancel and job.cancel.is_set()):
                part.unanswered.add(node)  # e.g. its slurmd not up yet after a reboot
        part.file(node, res, state, state_error, node in job.states)
    return part
