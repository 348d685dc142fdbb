"""`clusterforge drift`: plan → each node's live state against its applied state (what its last provision
left) and the quick validators, site.yml in check+diff mode where that state is unknown, stale or found
changed (all nodes with --deep), merged per node → render → (optional) fix: provision and re-certify the
drifted nodes → exit code."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge import __version__, targets, term
from clusterforge.certify.node_job import StepAnswer
from clusterforge.certify.results import NodeResult
from clusterforge.certify.runner import run_checks
from clusterforge.drift import formats
from clusterforge.drift.ansible_diff import items_from_check_run
from clusterforge.drift.applied import compare, fast_or_deep
from clusterforge.drift.model import DriftItem, DriftReport
from clusterforge.drift.run import add_validator_items, certificate_drift
from clusterforge.errors import ExitCode
from clusterforge.flows.certify import certify_flow
from clusterforge.flows.node_side import bad_via, engine, node_side, split_by_scheduler
from clusterforge.flows.plan import load_plan
from clusterforge.flows.provision_report import print_report
from clusterforge.records.outcomes import recorded_run
from clusterforge.remote.inventory import plan_order, resolve_hosts
from clusterforge.remote.node_state import StateRead, read_states
from clusterforge.run.ansible import run_playbook, strategy_env
from clusterforge.run.inputs import inputs_digest
from clusterforge.run.progress import Progress
from clusterforge.run.provision import Options, provision_recorded
from clusterforge.run.shard import forks_for, select
from clusterforge.term import safe, terminal_text


def render(report: DriftReport, fmt: str, allow_unreachable: bool) -> str:
    if fmt == "json":
        return formats.as_json(report)
    if fmt == "junit":
        return formats.junit(report)
    if fmt == "markdown":
        return formats.markdown(report, allow_unreachable)
    return formats.text(report, allow_unreachable)


def publish(
    report: DriftReport, fmt: str, allow_unreachable: bool, output: Path | None, console: Console
) -> None:
    """The report in `fmt` to `output` (the text on `console` for people), or to stdout without one."""
    if output is not None:
        output.write_text(render(report, fmt, allow_unreachable), encoding="utf-8")
        console.out(terminal_text(render(report, "text", allow_unreachable)), end="", highlight=False)
        console.print(f"report ({fmt}): {safe(output)}")
        return
    stdout = term.console()
    stdout.out(terminal_text(render(report, fmt, allow_unreachable)), end="", highlight=False)


def drift_flow(
    spec: Path,
    fmt: str,
    limit: str | None,
    allow_unreachable: bool,
    fix: bool,
    output: Path | None,
    console: Console,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
    deep: bool = False,
    via: str = "auto",
) -> int:
    strategy_env()  # a bad $CLUSTERFORGE_ANSIBLE_STRATEGY is refused before anything runs
    if wrong := bad_via(via):  # before the plan is loaded (and the generated inventory written)
        console.print(f"[red]error[/]: {safe(wrong)}")
        return int(ExitCode.BAD_INPUT)
    plan, inv = load_plan(spec)
    target = targets.for_plan(plan.doc)
    env = target.environment(plan.doc)
    scheduler, wrong = engine(target, plan.doc, via, spec, "drift")
    if wrong:
        console.print(f"[red]error[/]: {safe(wrong)}")
        return int(ExitCode.BAD_INPUT)
    record = (spec, allow_unreachable)
    report = drift_recorded(
        plan.doc, inv, limit, record, shard=shard, extra_vars=extra_vars, env=env, console=console, deep=deep,
        scheduler=scheduler,
    )  # fmt: skip
    publish(report, fmt, allow_unreachable, output, console)
    if fix and report.drifted(allow_unreachable):
        nodes = sorted({i.node for i in report.items if i.node not in report.unreachable})
        if nodes:
            console.print(f"[bold]»[/] fixing {safe(', '.join(nodes))}")
            opts = Options(limit=",".join(nodes))
            rep = provision_recorded(plan.doc, inv, opts, target.pool_manager(plan.doc), console, spec, env)
            print_report(rep, console)
            certify_flow(spec, tier="quick", limit=",".join(nodes), admit=True, console=console)
            report = drift_recorded(
                plan.doc, inv, limit, record, shard=shard, env=env, console=console, deep=deep,
                scheduler=scheduler,
            )  # fmt: skip
            publish(report, fmt, allow_unreachable, output, console)
    if report.errors and not report.drifted(allow_unreachable):
        return int(ExitCode.TOOL_FAILED)
    return int(ExitCode.NOT_AS_DECLARED if report.drifted(allow_unreachable) else ExitCode.OK)


def ansible_drift(
    report: DriftReport,
    inventory: Path,
    hosts: list[str],
    forks: int | None,
    env: dict[str, str] | None = None,
    extra_vars: dict[str, Any] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    res = run_playbook(
        "site.yml",
        inventory,
        limit=",".join(hosts),
        check=True,
        diff=True,
        forks=forks,
        env=env,
        extravars=extra_vars,
        on_event=on_event,
    )
    report.items += items_from_check_run(res)
    for h in hosts:
        hr = res.hosts.get(h)
        if hr is None or hr.unreachable:
            if h not in report.unreachable:
                report.unreachable.append(h)
        elif hr.failed:
            report.errors.append(f"{h}: check run failed at '{hr.failed_task}': {hr.message}")


def _check_and_validate(
    report: DriftReport,
    plan_doc: dict[str, Any],
    inventory: Path,
    hosts: list[str],
    deep_hosts: list[str],
    fast: dict[str, dict[str, Any]],
    forks: int | None,
    validators: bool,
    extra_vars: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    step_hosts: list[str] | None = None,
    scheduler: Any | None = None,
    check_run: bool = True,
) -> None:
    """The quick validators on every host (`step_hosts`: run by the nodes themselves through `scheduler`'s
    engine, with their applied-state reads), the applied-state read of the `fast` hosts and the check run of
    the `deep_hosts`, side by side: all only read the nodes, and the check run (one Ansible controller
    process, mostly one core) leaves CPU for the SSH sessions. A fast host found changed is then run
    through the check as well, so that each difference is named by the task that manages it. Without
    `check_run` (provision's read: `clusterforge.flows.converged`) no check run: only the reads."""
    cancel = threading.Event()
    stepped = set(step_hosts or ()) if validators else set()  # the step runs the validators: none without
    by_ssh = [h for h in hosts if h not in stepped]
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="drift-read") as pool:
        checks = (
            pool.submit(run_checks, plan_doc, inventory, "quick", by_ssh, False, None, cancel, env=env)
            if validators and by_ssh
            else None
        )
        states = pool.submit(
            read_states,
            plan_doc,
            inventory,
            {h: fast[h].get("managed") or {} for h in fast if h not in stepped},
        )
        step = (
            pool.submit(
                _step, scheduler, plan_doc, inventory, [h for h in hosts if h in stepped], fast, env, cancel
            )
            if stepped
            else None
        )
        try:
            # env: the target's (the lab BMCs' account for the bios role); run in this (main) thread, which
            # owns signal handling
            if deep_hosts and check_run:
                ansible_drift(report, inventory, deep_hosts, forks, env, extra_vars, on_event)
            reads = states.result()
            answer = step.result() if step is not None else None
            if answer is not None:
                reads.update(_step_reads(answer, [h for h in fast if h in stepped]))
                _over_ssh(answer, reads, plan_doc, inventory, fast, validators, env, cancel)
            changed = _compare_applied(report, fast, reads)
            if changed and check_run:
                report.deep.update(
                    {h: "changed since its provision: the check names each difference" for h in changed}
                )
                ansible_drift(report, inventory, changed, forks, env, extra_vars, on_event)
        except BaseException:
            cancel.set()  # interrupted: stop the validators before leaving
            raise
        if checks is not None:
            add_validator_items(report, checks.result())
        if answer is not None:
            add_validator_items(report, {n: r.checks for n, r in answer.results.items()})


def _step(
    scheduler: Any,
    plan_doc: dict[str, Any],
    inventory: Path,
    hosts: list[str],
    fast: dict[str, dict[str, Any]],
    env: dict[str, str] | None,
    cancel: threading.Event,
) -> StepAnswer:
    """The quick validators and the fast hosts' applied-state reads, run by the nodes themselves through
    the pool's engine (one Slurm job step, or a Kubernetes Job per node)."""
    workdir = Path(tempfile.mkdtemp(prefix="cf-drift-step-"))
    try:
        return node_side(
            scheduler, plan_doc, inventory, hosts, workdir,
            states={h: fast[h].get("managed") or {} for h in hosts if h in fast}, env=env, cancel=cancel,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _over_ssh(
    answer: StepAnswer,
    reads: dict[str, StateRead],
    plan_doc: dict[str, Any],
    inventory: Path,
    fast: dict[str, dict[str, Any]],
    validators: bool,
    env: dict[str, str] | None,
    cancel: threading.Event,
) -> None:
    """The nodes the engine brought nothing back for (e.g. a slurmd not up yet after a reboot) read over
    SSH, as nodes not in the pool are: their validators' results and applied-state reads replace the step's
    errors in `answer` and `reads`."""
    retry = sorted(answer.unanswered)
    if not retry or cancel.is_set():
        return
    if validators:
        for node, checks in run_checks(
            plan_doc, inventory, "quick", retry, False, None, cancel, env=env
        ).items():
            answer.results[node] = NodeResult(node, checks)
    reads.update(
        read_states(plan_doc, inventory, {h: fast[h].get("managed") or {} for h in retry if h in fast})
    )


def _step_reads(answer: StepAnswer, hosts: list[str]) -> dict[str, StateRead]:
    """The step's applied-state reads as the SSH reads are (a node that did not answer: an error, not
    unreachable: Slurm, not SSH, could not reach it)."""
    return {
        h: StateRead(h, answer.states.get(h), answer.state_errors.get(h, "not read in the Slurm step"))
        for h in hosts
    }


def _compare_applied(
    report: DriftReport, fast: dict[str, dict[str, Any]], reads: dict[str, StateRead]
) -> list[str]:
    """Items of every fast host whose live state differs from its applied state; the hosts that do."""
    changed = []
    for host, rec in sorted(fast.items()):
        read = reads.get(host)
        if read is None or read.state is None:
            why = read.error if read else "not read"
            if why.startswith("unreachable"):
                if host not in report.unreachable:
                    report.unreachable.append(host)
            else:
                report.errors.append(f"{host}: applied-state read failed: {why}")
            continue
        report.errors += [f"{host}: applied-state read: {e}" for e in read.state.get("errors", [])]
        report.compared.append(host)
        items = compare(host, rec, read.state)
        if items:
            report.items += items
            changed.append(host)
    return changed


def drift(
    plan_doc: dict[str, Any],
    inventory: Path,
    limit: str | None = None,
    forks: int | None = None,
    validators: bool = True,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    console: Console | None = None,
    deep: bool = False,
    scheduler: Any | None = None,
    check_run: bool = True,
) -> DriftReport:
    """Each node read against its applied state (what its last provision left: files, packages, services,
    modules) with the quick validators, merged per node; the check run (site.yml --check --diff) for the
    nodes whose applied state is unknown or of another plan, for those found changed, and for all with
    `deep` (or `extra_vars`, which change what is applied). `env`: the target's; with `console`, the
    progress on it (per host, or summary lines); with a `scheduler` (the Slurm or Kubernetes pool manager),
    the validators and applied-state reads of the nodes it can run work on are run by the nodes themselves
    (--via slurm: one job step; --via kubernetes: one Job per node). Without `check_run`, only the reads:
    the deep nodes are named in `report.deep` and not checked (what provision's read wants to know)."""
    planned = [n["name"] for n in plan_doc["nodes"]]
    hosts = select(plan_order(resolve_hosts(inventory, limit), plan_doc), shard)
    forks = forks or forks_for(len(hosts))
    report = DriftReport(plan_doc["cluster"], plan_doc["plan_hash"], hosts)
    missing = [n for n in select(planned, shard) if n not in hosts] if not limit else []
    for n in missing:
        report.items.append(DriftItem(n, "inventory", "node in the inventory", "missing", "inventory"))
    if deep or extra_vars:
        why = "--deep" if deep else "--extra-vars change what is applied"
        fast: dict[str, dict[str, Any]] = {}
        report.deep = dict.fromkeys(hosts, why)
    else:
        applied = _latest_applied(plan_doc["cluster"], hosts)
        split = fast_or_deep(plan_doc, applied, __version__, inputs_digest(inventory))
        fast, report.deep = split.fast, dict(split.deep)
        report.items += split.behind
    deep_hosts = [h for h in hosts if h in report.deep]
    # without the check run the deep nodes are only named: their reads could tell nothing of use
    read = hosts if check_run else [h for h in hosts if h in fast]
    if not read and not check_run:
        return report
    args = (report, plan_doc, inventory, read, deep_hosts, fast, forks, validators, extra_vars, env)
    step_hosts = split_by_scheduler(scheduler, read, console)[0] if scheduler is not None else None
    if console is None:
        _check_and_validate(*args, step_hosts=step_hosts, scheduler=scheduler, check_run=check_run)
    else:
        with Progress(console, hosts, label="drift check run") as progress:
            progress.phase(
                f"drift: {len(fast)} nodes against their applied state, {len(deep_hosts)} by site.yml "
                f"--check --diff; the quick validators on {len(hosts)}"
                if check_run
                else f"read: {len(fast)} nodes against their applied state and the quick validators; "
                f"{len(deep_hosts)} with no usable applied state"
            )
            _check_and_validate(
                *args, progress.event, step_hosts=step_hosts, scheduler=scheduler, check_run=check_run
            )
    reachable = [h for h in hosts if h not in report.unreachable]
    certificate_drift(report, plan_doc, reachable)
    for h in report.unreachable:
        report.items.append(
            DriftItem(
                h,
                "reachability",
                "reachable over SSH",
                "unreachable",
                "ansible" if h in report.deep else "ssh",
                fix="check the node's power, network and sshd",
            )
        )
    report.items.sort(key=lambda i: (i.node, i.source, i.setting))
    return report


def _latest_applied(cluster: str, hosts: list[str]) -> dict[str, dict[str, Any] | None]:
    from clusterforge.records.store import Store

    with Store() as store:
        return store.latest_applied(cluster, hosts)


def drift_recorded(
    plan_doc: dict[str, Any],
    inventory: Path,
    limit: str | None,
    record: tuple[str | Path | None, bool],
    *,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    console: Console | None = None,
    deep: bool = False,
    scheduler: Any | None = None,
) -> DriftReport:
    """`drift` as a drift run of the records (`record`: the spec path, and whether unreachable nodes are
    allowed): started `running`, finished with each node's outcome (the status as the exit code reads it);
    an exception leaves it `incomplete`."""
    spec_path, allow_unreachable = record
    with recorded_run(
        "drift", plan_doc["cluster"], plan_hash=plan_doc.get("plan_hash"), spec_path=spec_path, shard=shard
    ) as rec:
        report = drift(
            plan_doc,
            inventory,
            limit,
            shard=shard,
            extra_vars=extra_vars,
            env=env,
            console=console,
            deep=deep,
            scheduler=scheduler,
        )
        rec.finish(report.outcome(allow_unreachable))
    return report
