"""`make bench`: every stage side by side in one run on this machine; writes bench/results.json and prints a
markdown table (stage, variant, nodes, seconds, seconds per node). No assertions: figures only.

Stages (choose with --stages; sizes with the flags below):
  plan       `clusterforge plan` stages for ~1k / 10k / 100k GPUs (bench_plan.py's fresh-process runs)
  lab        lab up (infra + every node SSH-reachable) for 4 / 16 nodes (32 with --full), then down
  provision  first provision of pristine nodes converging every role after the reboot, the nodes reset, then
             first (only the roles that asked converge after the reboot) and no-op provision of 4 nodes (16
             with --full), tuned runner env (Mitogen); no-op again
             with the stock env (linear strategy) and, last in the lab session, with the naive env
             (clusterforge.run.naive: forks 5, no pipelining, no ControlPersist, no fact cache)
  certify    quick tier, 4 / 16 nodes (32 with --full; nodes provisioned only where a provision or drift
             stage runs at that size, else pristine: same checks, most fail): end to end (certify_flow), the
             validators alone with the runner's one SSH session per node, the validators alone with
             SSH multiplexing off (ControlMaster no: a new connection per command; reads still batched),
             and the naive baseline: multiplexing off and the validators' --cf-no-batch (no batched
             prefetch, no output shared between checks: every check opens its own connections)
  drift      `clusterforge drift`: fast (applied state) and --deep (check+diff site.yml), each with the
             quick validators + certificates, 4 nodes (16 --full); controller CPU-s

The lab stages need root and a host with no other lab up: the run waits (--wait-lab) for other labs to go,
holds the integration tests' lock (/run/lock/clusterforge-lab-tests.lock) while its lab (cluster `bench`,
from inventory/clusters/lab.yaml with N nodes, one rollout batch) runs, and brings it down afterwards.
Facts, records and certificates go to a private temporary folder.

    .venv/bin/python bench/run.py                      # default set
    .venv/bin/python bench/run.py --quick              # plan 1k/10k + 4-node lab, provision, certify, drift
    .venv/bin/python bench/run.py --full               # adds 32-node lab/certify, 16-node provision/drift
                                                       # (`make bench`; `make bench-quick` is --quick)
    .venv/bin/python bench/run.py --stages plan --plan-cases 100k
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import json
import math
import os
import platform
import resource
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results.json"
LAB_LOCK = Path("/run/lock/clusterforge-lab-tests.lock")
STAGES = ("plan", "lab", "provision", "certify", "drift")

Row = dict[str, Any]


# -- pure helpers (unit-tested) ----------------------------------------------------------------------------
def per_node(seconds: float | None, nodes: int | None) -> float | None:
    """Seconds per node (None when either is missing or nodes is 0)."""
    if seconds is None or not nodes:
        return None
    return seconds / nodes


def row(stage: str, variant: str, nodes: int, seconds: float | None, **extra: Any) -> Row:
    return {
        "stage": stage,
        "variant": variant,
        "nodes": nodes,
        "seconds": None if seconds is None else round(seconds, 3),
        "per_node_s": None if seconds is None else round(per_node(seconds, nodes) or 0.0, 6),
        **extra,
    }


def ratio(slow: float | None, fast: float | None) -> float | None:
    """slow / fast (how many times faster `fast` is); None when either is missing or fast is not > 0."""
    if slow is None or fast is None or fast <= 0:
        return None
    return slow / fast


def find(rows: list[Row], stage: str, variant: str, nodes: int) -> Row | None:
    for r in rows:
        if (
            r["stage"] == stage
            and r["variant"] == variant
            and r["nodes"] == nodes
            and r.get("seconds") is not None
        ):
            return r
    return None


#: (name, stage, slow variant, fast variant): the tuned-vs-naive comparisons reported as ratios
COMPARISONS = (
    (
        "first provision: every role after the reboot / the roles that asked (rest read back)",
        "provision",
        "first (tuned, every role after the reboot)",
        "first (tuned)",
    ),
    ("no-op provision: naive env / tuned env", "provision", "no-op naive", "no-op tuned"),
    ("no-op provision: stock tuned (linear) / tuned (Mitogen)", "provision", "no-op stock", "no-op tuned"),
    ("drift: stock tuned (linear) / tuned (Mitogen)", "drift", "stock (linear)", "tuned"),
    ("drift: deep (check+diff, Mitogen) / fast (applied state)", "drift", "tuned", "fast"),
    ("drift: fast over SSH / fast as one Slurm job step", "drift", "fast", "fast via slurm step"),
    (
        "certification validators: no SSH multiplexing / one session per node",
        "certify",
        "validators no-mux",
        "validators",
    ),
    (
        "certification validators: naive (a connection per check) / tuned",
        "certify",
        "validators naive",
        "validators",
    ),
    (
        "certification validators: over SSH from here / one Slurm job step (nodes check themselves)",
        "certify",
        "validators",
        "validators via slurm step",
    ),
)


def ratios(rows: list[Row]) -> list[dict[str, Any]]:
    """Every comparison for which both variants were measured at the same node count."""
    out = []
    sizes = sorted({r["nodes"] for r in rows})
    for name, stage, slow, fast in COMPARISONS:
        for n in sizes:
            s, f = find(rows, stage, slow, n), find(rows, stage, fast, n)
            if s and f:
                out.append(
                    {
                        "comparison": name,
                        "nodes": n,
                        "slow_s": s["seconds"],
                        "fast_s": f["seconds"],
                        "ratio": round(ratio(s["seconds"], f["seconds"]) or 0.0, 2),
                    }
                )
    return out


def _fmt(v: Any, digits: int = 2) -> str:
    """digits < 0: that many significant digits (per-node figures span 0.0004 s to 60 s)."""
    if v is None:
        return "—"
    if isinstance(v, float) and digits < 0:
        return f"{v:.{-digits}g}"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v).replace("|", "\\|")


def render_table(rows: list[Row]) -> str:
    """Markdown: one line per measurement; seconds per node to 3 significant digits."""
    lines = ["| stage | variant | nodes | seconds | s/node | note |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {_fmt(r['stage'])} | {_fmt(r['variant'])} | {_fmt(r['nodes'])} | {_fmt(r.get('seconds'))} | "
            f"{_fmt(r.get('per_node_s'), -3)} | {_fmt(r.get('note', ''))} |"
        )
    return "\n".join(lines)


def render_ratios(rs: list[dict[str, Any]]) -> str:
    if not rs:
        return "(no comparison measured on both sides)"
    lines = ["| comparison | nodes | slow s | fast s | ratio |", "|---|---|---|---|---|"]
    for r in rs:
        lines.append(
            f"| {r['comparison']} | {r['nodes']} | {_fmt(r['slow_s'])} | {_fmt(r['fast_s'])} | "
            f"{_fmt(r['ratio'])}× |"
        )
    return "\n".join(lines)


def bench_spec(base: dict[str, Any], nodes: int, cluster: str = "bench") -> dict[str, Any]:
    """The lab spec resized to `nodes` (half RoCE, half InfiniBand), racks of 4 nodes, one rollout batch,
    no BMCs (so site.yml skips the bios role: its Redfish calls are not in these figures) and so no BIOS
    pin (with no BMC to read it from, `software.bios` could only be an error on every node)."""
    spec = json.loads(json.dumps(base))
    spec["metadata"]["name"] = cluster
    spec.get("software", {}).pop("bios", None)
    counts = [nodes - nodes // 2, nodes // 2]
    for pool, count in zip(spec["pools"], counts, strict=True):
        pool["count"] = count
        pool.pop("nodes", None)  # per-node entries (the lab's BMCs) name the 4 lab nodes only: none here
    spec["site"]["racks"]["count"] = math.ceil(nodes / spec["site"]["racks"]["nodes_per_rack"])
    spec["rollout"]["serial"] = nodes
    return spec


def plan_for(args: argparse.Namespace) -> dict[str, list[Any]]:
    """What to run: stage -> sizes (plan: case labels)."""
    want = set(args.stages or STAGES)
    if args.quick:
        plan_cases, lab, prov, cert, drift = ["1k", "10k"], [4], [4], [4], [4]
    elif args.full:
        plan_cases, lab, prov, cert, drift = ["1k", "10k", "100k"], [4, 16, 32], [4, 16], [4, 16, 32], [4, 16]
    else:
        plan_cases, lab, prov, cert, drift = ["1k", "10k", "100k"], [4, 16], [4], [4, 16], [4]
    sizes = {
        "plan": args.plan_cases or plan_cases,
        "lab": args.lab_sizes or lab,
        "provision": args.provision_sizes or prov,
        "certify": args.certify_sizes or cert,
        "drift": args.drift_sizes or drift,
    }
    naive = getattr(args, "naive_sizes", None)
    out: dict[str, list[Any]] = {k: (v if k in want else []) for k, v in sizes.items()}
    if naive is not None:  # provision sizes that also run the naive no-op (default: every provision size)
        out["naive"] = [n for n in naive if n in out["provision"]]
    return out


def lab_sessions(sizes: dict[str, list[Any]]) -> list[int]:
    """Node counts that need a lab: any node stage at that size (each size is one lab session)."""
    return sorted({n for k in ("lab", "provision", "certify", "drift") for n in sizes[k]})


# -- measurements ------------------------------------------------------------------------------------------
def bench_plan(cases: list[str], repeat: int) -> list[Row]:
    sys.path.insert(0, str(BENCH))
    import bench_plan as bp

    rows = []
    for label in cases:
        r = bp._stages(bp.CASES[label], repeat)
        rows.append(
            row(
                "plan",
                f"{label} GPUs",
                int(r["nodes"]),
                float(r["total_s"]),
                cpu_s=round(float(r["cpu_s"]), 3),
                gpus=r["gpus"],
                peak_rss_mib=round(float(r["peak_rss_mib"])),
                note=f"{r['gpus']:,} GPUs; CPU {r['cpu_s']:.2f} s; peak RSS {r['peak_rss_mib']:.0f} MiB",
            )
        )
        _say(rows[-1])
    return rows


def _other_labs() -> dict[str, list[str]]:
    from clusterforge.lab import cleanup

    return {k: v for k, v in cleanup.leftovers().items() if v}


@contextlib.contextmanager
def lab_lock(timeout: float) -> Iterator[None]:
    """The integration tests' set-up lock, held while the bench lab runs."""
    LAB_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LAB_LOCK, "w") as f:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{LAB_LOCK} not free within {timeout:.0f} s") from None
                time.sleep(1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.monotonic()
    out = fn()
    return time.monotonic() - t0, out


def lab_session(n: int, sizes: dict[str, list[Any]], tmp: Path, log: Any) -> list[Row]:
    """One lab of n nodes: up, then the stages asked for at this size, then down (always)."""
    import yaml
    from rich.console import Console

    from clusterforge.flows.plan import load_plan
    from clusterforge.lab import Lab

    base = yaml.safe_load((ROOT / "inventory/clusters/lab.yaml").read_text())
    spec = tmp / f"bench-{n}.yaml"
    spec.write_text(yaml.safe_dump(bench_spec(base, n)))
    plan, inv = load_plan(spec, tmp / f"generated-{n}")
    doc: dict[str, Any] = plan.doc
    console = Console(file=log, width=200)
    rows: list[Row] = []
    lab = Lab(doc)
    for node in lab.plan.nodes:  # pristine nodes: an earlier bench's provisioned upper layers would make
        shutil.rmtree(lab.paths(node.name).upper, ignore_errors=True)  # "first provision" a no-op
    try:
        t_infra, _ = _timed(lab.infra_up)
        t0 = time.monotonic()
        for node in lab.plan.nodes:
            lab.node_up(node.name, prepared=True)
        lab.wait_ssh(timeout=600)
        t_nodes = time.monotonic() - t0
        rows.append(
            row(
                "lab up",
                "infra + nodes SSH-reachable",
                n,
                t_infra + t_nodes,
                note=f"infra {t_infra:.1f} s, nodes {t_nodes:.1f} s",
            )
        )
        _say(rows[-1])
        provisioned = False
        if n in sizes["provision"] or n in sizes["drift"]:
            rows += bench_provision(doc, inv, n, console, naive=False, lab=lab)
            provisioned = True
        if n in sizes["certify"]:
            rows += bench_certify(doc, inv, spec, n, console, tmp, provisioned)
        if n in sizes["drift"] and provisioned:
            rows += bench_drift(doc, inv, n)
        # the naive no-op last: by far the longest stage, so a time-boxed run keeps every other row
        if n in sizes["provision"] and n in (
            sizes["provision"] if sizes.get("naive") is None else sizes["naive"]
        ):
            rows += bench_naive(doc, inv, n, console)
    finally:
        t_down, _ = _timed(lab.down)
        rows.append(row("lab down", "", n, t_down))
        _say(rows[-1])
    return rows


def bench_provision(
    doc: dict[str, Any], inv: Path, n: int, console: Any, naive: bool, lab: Any = None
) -> list[Row]:
    """First run, then no-op runs: tuned, stock; with `naive`, the naive no-op and tuned again. With `lab`,
    a first run that converges every role after the reboot goes before, on the same pristine nodes (reset
    in between): the after-reboot check side by side."""
    rows = []
    if lab is not None:
        rows.append(_provision_row(doc, inv, n, console, "first (tuned, every role after the reboot)"))
        for node in lab.plan.nodes:
            lab.reset(node.name, wait=True)
        lab.wait_ssh(timeout=600)
    rows += [_provision_row(doc, inv, n, console, v) for v in ("first (tuned)", "no-op tuned", "no-op stock")]
    if naive:
        rows += bench_naive(doc, inv, n, console)
    return rows


def bench_naive(doc: dict[str, Any], inv: Path, n: int, console: Any) -> list[Row]:
    """The naive no-op (slowest by far), then tuned again to show the order did not favour tuned."""
    return [_provision_row(doc, inv, n, console, v) for v in ("no-op naive", "no-op tuned (again)")]


def _provision_row(doc: dict[str, Any], inv: Path, n: int, console: Any, variant: str) -> Row:
    from clusterforge import targets
    from clusterforge.run.naive import ANSIBLE_DEFAULT_FORKS, naive_runner, stock_runner
    from clusterforge.run.provision import Options, provision_recorded
    from clusterforge.run.shard import forks_for

    opts = (
        Options(forks=ANSIBLE_DEFAULT_FORKS)
        if variant == "no-op naive"
        else Options(converge_all_after_reboot="every role after the reboot" in variant)
    )
    ctx = {"no-op naive": naive_runner, "no-op stock": stock_runner}.get(variant, contextlib.nullcontext)
    with ctx():
        target = targets.for_plan(doc)
        # recorded, as `clusterforge provision` runs it: the nodes' applied state is what the fast drift reads
        secs, rep = _timed(
            lambda: provision_recorded(
                doc, inv, opts, target.pool_manager(doc), console, None, target.environment(doc)
            )
        )
    changed = sum(h.changed for h in rep.hosts.values())
    rebooted = sum(1 for h in rep.hosts.values() if h.rebooted)
    failed = {h.host: f"{h.failed_task}: {h.message}"[:120] for h in rep.failed}
    forks = opts.forks or forks_for(n)
    note = f"forks {forks}; {changed} changed tasks; {rebooted} rebooted" + (
        f"; FAILED {failed}" if failed else ""
    )
    r = row("provision", variant, n, secs, ok=rep.ok, changed=changed, rebooted=rebooted, note=note)
    _say(r)
    return r


@contextlib.contextmanager
def no_ssh_multiplexing() -> Iterator[None]:
    """The certify runner's ssh_config with ControlMaster off: every command a new SSH connection."""
    from clusterforge.certify import runner

    original = runner.ssh_setup

    def setup(plan_doc: dict[str, Any], inventory: Path, nodes: list[str]) -> Any:
        ssh = original(plan_doc, inventory, nodes)
        lines = [
            ln
            for ln in ssh.config.read_text().splitlines()
            if not ln.strip().startswith(("ControlMaster", "ControlPath", "ControlPersist"))
        ]
        ssh.config.write_text("\n".join([*lines, "  ControlMaster no", "  ControlPath none"]) + "\n")
        return ssh

    runner.ssh_setup = setup  # type: ignore[assignment]
    try:
        yield
    finally:
        runner.ssh_setup = original  # type: ignore[assignment]


def bench_certify(
    doc: dict[str, Any], inv: Path, spec: Path, n: int, console: Any, tmp: Path, provisioned: bool
) -> list[Row]:
    """Quick tier. On a size that is not provisioned (no provision/drift stage at that size) the nodes are
    pristine: the same checks run and most fail, so the row measures the checks' cost, not a passing run."""
    from clusterforge import targets
    from clusterforge.certify import runner, slurm_step
    from clusterforge.flows.certify import Outputs, certify_flow

    nodes = [x["name"] for x in doc["nodes"]]
    env = targets.for_plan(doc).environment(doc)  # as the certify flow passes it
    rows = []
    out = tmp / f"certify-{n}.json"
    cwd = os.getcwd()
    os.chdir(tmp)  # certify_flow plans SPEC into ./inventory/generated: keep it out of the repository
    try:
        secs, rc = _timed(lambda: certify_flow(spec, "quick", None, False, console, Outputs(json=out)))
    finally:
        os.chdir(cwd)
    summary = json.loads(out.read_text()).get("summary") if out.exists() else None
    state = "provisioned" if provisioned else "pristine nodes (not provisioned: checks run, most fail)"
    rows.append(row("certify", "end to end (quick)", n, secs, exit=rc, note=f"{state}; exit {rc}; {summary}"))
    _say(rows[-1])

    def validators(variant: str, step: bool = False) -> None:
        def run() -> dict[str, Any]:
            if step:  # the node checker the monitoring role installed, one srun over every node
                return slurm_step.certify_step(doc, inv, nodes, "quick", tmp / f"step-{n}", 900, env=env)
            return runner.certify_nodes(doc, inv, nodes, "quick", env=env)

        cpu0 = _cpu_s()
        secs, res = _timed(run)
        cpu = _cpu_s() - cpu0
        checks = sum(len(r.checks) for r in res.values())
        verdicts = sorted({r.verdict for r in res.values()})
        rows.append(
            row(
                "certify",
                variant,
                n,
                secs,
                checks=checks,
                cpu_s=round(cpu, 2),
                note=f"{checks} checks ({checks / max(1, n):.0f}/node), verdicts {verdicts}; "
                f"controller {cpu / max(1, n):.2f} CPU-s/node",
            )
        )
        _say(rows[-1])

    validators("validators")
    if provisioned:  # the node checker is installed by the provision
        validators("validators via slurm step", step=True)
    with no_ssh_multiplexing():
        validators("validators no-mux")
        with _environ(CLUSTERFORGE_VALIDATORS_NO_BATCH="1"):  # validators' --cf-no-batch
            validators("validators naive")
    return rows


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cpu_s() -> float:
    """CPU seconds of this process (all threads) and its waited-for children (ansible-playbook, ssh)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def bench_drift(doc: dict[str, Any], inv: Path, n: int) -> list[Row]:
    """Drift side by side on the same provisioned nodes: fast (each node against its applied state + the
    quick validators), deep (site.yml check+diff + the quick validators) tuned (Mitogen), deep on the stock
    tuned environment (linear strategy); each with the controller's CPU seconds."""
    from clusterforge import targets
    from clusterforge.flows.drift import drift
    from clusterforge.run.naive import stock_runner

    env = targets.for_plan(doc).environment(doc)  # the lab BMCs' account for the bios role, as the flow

    rows = []
    slurm = targets.for_plan(doc).pool_manager(doc)  # the lab's Slurm: the nodes read themselves in a step
    variants = (
        ("fast", contextlib.nullcontext, False, None),
        ("fast via slurm step", contextlib.nullcontext, False, slurm),
        ("tuned", contextlib.nullcontext, True, None),
        ("stock (linear)", stock_runner, True, None),
    )
    for variant, ctx, deep, scheduler in variants:
        with ctx():
            cpu0 = _cpu_s()
            secs, rep = _timed(
                lambda: drift(doc, inv, env=env, deep=deep, scheduler=scheduler)  # noqa: B023 (called here)
            )
            cpu = _cpu_s() - cpu0
        how = "check+diff on every node" if deep else f"applied state; check+diff on {len(rep.deep)} nodes"
        rows.append(
            row(
                "drift",
                variant,
                n,
                secs,
                items=len(rep.items),
                cpu_s=round(cpu, 2),
                note=f"{how} + quick validators; {len(rep.items)} drift items; "
                f"controller {cpu / n:.2f} CPU-s/node",
            )
        )
        _say(rows[-1])
    return rows


# -- driver ------------------------------------------------------------------------------------------------
def _say(r: Row) -> None:
    print(
        f"  {r['stage']:<10} {r['variant']:<30} {r['nodes']:>6} nodes {_fmt(r.get('seconds')):>8} s "
        f"({_fmt(r.get('per_node_s'), 3)} s/node) {r.get('note', '')}",
        file=sys.stderr,
        flush=True,
    )


def meta() -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", nargs="+", choices=STAGES, help="stages to run (default: all)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="short subset (plan 1k/10k; 4-node lab stages)")
    mode.add_argument(
        "--full", action="store_true", help="larger sizes (32-node lab/certify, 16-node provision)"
    )
    ap.add_argument("--plan-cases", nargs="+", choices=("1k", "10k", "100k"))
    ap.add_argument("--plan-repeat", type=int, default=1, help="fresh-process runs per plan case (best kept)")
    ap.add_argument("--lab-sizes", nargs="+", type=int)
    ap.add_argument("--provision-sizes", nargs="+", type=int)
    ap.add_argument("--certify-sizes", nargs="+", type=int)
    ap.add_argument("--drift-sizes", nargs="+", type=int)
    ap.add_argument(
        "--naive-sizes",
        nargs="*",
        type=int,
        help="provision sizes that also run the naive no-op (default: all; none: no naive run)",
    )
    ap.add_argument("--wait-lab", type=float, default=900, help="seconds to wait for other labs to go down")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    sizes = plan_for(args)
    info = meta()
    rows: list[Row] = []
    skipped: list[str] = []
    print(
        f"bench {info['date']} on {info['host']}: {info['cpus']} CPUs, load {info['loadavg_start']}",
        file=sys.stderr,
    )
    if sizes["plan"]:
        rows += bench_plan(sizes["plan"], args.plan_repeat)
    sessions = lab_sessions(sizes)
    if sessions:
        rows_lab, why = run_labs(sessions, sizes, args.wait_lab)
        rows += rows_lab
        if why:
            skipped.append(why)
    info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    rs = ratios(rows)
    doc = {"meta": info, "sizes": sizes, "rows": rows, "ratios": rs, "skipped": skipped}
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(render_table(rows))
    print()
    print(render_ratios(rs))
    for s in skipped:
        print(f"\nnot run: {s}")
    print(f"\n{info['cpus']} CPUs, load average {info['loadavg_start']} → {info['loadavg_end']}; {args.out}")
    return 0


def run_labs(sessions: list[int], sizes: dict[str, list[Any]], wait: float) -> tuple[list[Row], str]:
    if os.geteuid() != 0:
        return [], "lab stages need root"
    tmp = Path(tempfile.mkdtemp(prefix="cf-bench-"))
    os.environ["CLUSTERFORGE_DB"] = str(tmp / "records.db")
    os.environ["CLUSTERFORGE_CERT_DIR"] = str(tmp / "certs")
    from clusterforge.run import ansible

    ansible.FACT_CACHE = tmp / "facts"  # a private fact cache: other labs use the same host names
    rows: list[Row] = []
    log_path = tmp / "bench.log"
    print(f"lab log: {log_path}", file=sys.stderr)
    with log_path.open("w") as log:
        for n in sessions:
            deadline = time.monotonic() + wait
            while True:
                busy = _other_labs()
                if not busy:
                    with lab_lock(wait):
                        if not _other_labs():
                            rows += lab_session(n, sizes, tmp, log)
                            break
                if time.monotonic() > deadline:
                    return rows, f"labs of {n}+ nodes: another lab stayed up for {wait:.0f} s ({list(busy)})"
                time.sleep(5)
    return rows, ""


if __name__ == "__main__":
    raise SystemExit(main())
