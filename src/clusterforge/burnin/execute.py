"""Running an iteration's commands: SSH to the nodes (the run's ssh_config and ControlMaster per
node), pairwise `ib_write_bw` between nodes, and multi-node `all_reduce_perf` through a launcher (the
pool's scheduler: `srun`; or `mpirun`). Every command has a local deadline as well as a remote `timeout`.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.burnin import measure, suite
from clusterforge.burnin.model import Measurement
from clusterforge.burnin.pairs import Pair
from clusterforge.burnin.unmeasured import unmeasured, why_unmeasured
from clusterforge.hw import ParseError, perftest
from clusterforge.plan.expect import NodeExpect
from clusterforge.progress import NodeProgress
from clusterforge.remote.commands import argv, wrap
from clusterforge.remote.ssh import SshSetup, reachable, ssh_argv, ssh_setup
from clusterforge.remote.tools import Tool, cannot_certify, missing

GRACE_S = 15.0
READY_S = 30.0  # how long a pair's server may take to listen


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


def run_local(
    argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None, input: str | None = None
) -> Result:
    try:
        p = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            check=False,
            env=dict(env) if env is not None else None,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Result(124, out, f"no answer within {timeout_s:.0f} s: {' '.join(argv[:6])}")
    except OSError as exc:
        return Result(127, "", f"cannot run {argv[0]}: {exc}")
    return Result(p.returncode, p.stdout, p.stderr)


@dataclass
class Launcher:
    """Starts one process per node of a group for multi-node all_reduce.

    `slurm`: `srun -N<k> -w <nodes> --ntasks-per-node=1 [--mpi=M] [-Z] CMD` from this host (SLURM_CONF from
    the environment, or the lab controller's); with `no_allocate` (`-Z`, root or SlurmUser only) the step
    runs on drained nodes without a job allocation, which the scheduler would refuse them.
    `mpirun`: `mpirun -np <k> --host a:1,b:1 --map-by ppr:1:node -x NCCL_* CMD` (Open MPI, over SSH) for
    sites without a scheduler.
    """

    kind: str = "slurm"  # slurm | mpirun
    env: dict[str, str] = field(default_factory=dict)
    mpi: str = "none"  # srun --mpi (pmix on real clusters with nccl-tests built with MPI=1)
    no_allocate: bool = True
    hosts: dict[str, str] = field(default_factory=dict)  # node -> address (mpirun)
    extra: tuple[str, ...] = ()

    def argv(self, nodes: Sequence[str], command: Sequence[str]) -> list[str]:
        if self.kind == "slurm":
            head = [
                "srun",
                f"-N{len(nodes)}",
                "-w",
                ",".join(nodes),
                "--ntasks-per-node=1",
                f"--mpi={self.mpi}",
            ]
            return head + (["-Z"] if self.no_allocate else []) + list(self.extra) + list(command)
        if self.kind == "mpirun":
            hosts = ",".join(f"{self.hosts.get(n, n)}:1" for n in nodes)
            return [
                "mpirun",
                "-np",
                str(len(nodes)),
                "--host",
                hosts,
                "--map-by",
                "ppr:1:node",
                "-x",
                "NCCL_DEBUG=WARN",
                *self.extra,
                *command,
            ]
        raise ValueError(f"launcher must be slurm or mpirun, not {self.kind!r}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mpi": self.mpi,
            "no_allocate": self.no_allocate,
            "extra": list(self.extra),
        }


class Executor:
    """One run's connections to its nodes."""

    def __init__(
        self, plan_doc: Mapping[str, Any], inventory: Path, nodes: Sequence[str], jobs: int = 8
    ) -> None:
        self.ssh: SshSetup = ssh_setup(dict(plan_doc), inventory, list(nodes))
        self.jobs = max(1, jobs)
        self.unreachable: dict[str, str] = {}
        self.progress: NodeProgress | None = None  # each node's single-node suite: running → ok | error

    def close(self) -> None:
        self.ssh.close()

    def connect(self, nodes: Sequence[str]) -> dict[str, str]:
        """Open each node's ControlMaster; returns {node: why} for the unreachable ones."""
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            res = dict(zip(nodes, pool.map(lambda n: reachable(self.ssh, n), nodes), strict=True))
        self.unreachable = {n: why for n, (ok, why) in res.items() if not ok}
        return self.unreachable

    def ssh_argv(self, node: str, remote: str) -> list[str]:
        return ssh_argv(self.ssh.target(node), remote, config=self.ssh.config)

    def run(self, node: str, remote: str, timeout_s: float, input: str | None = None) -> Result:
        return run_local(self.ssh_argv(node, remote), timeout_s + GRACE_S, input=input)

    # -- single node ----------------------------------------------------------------------------------
    def node_suite(self, node: NodeExpect, opts: suite.SuiteOptions) -> suite.NodeSample:
        if self.progress is not None:
            self.progress.set(node.name, "running")
        sample = self._node_suite(node, opts)
        if self.progress is not None:
            whole = node.name not in self.unreachable and all(m.ok for m in sample.measurements)
            self.progress.set(node.name, "ok" if whole else "error")
        return sample

    def _node_suite(self, node: NodeExpect, opts: suite.SuiteOptions) -> suite.NodeSample:
        if node.name in self.unreachable:
            sections: dict[str, suite.Section] = {}
        else:
            text, deadline = suite.script(node, opts)
            res = self.run(node.name, "bash -s", deadline, input=text)
            sections = suite.split_sections(res.out)
            if not sections and res.rc:
                self.unreachable[node.name] = (res.err.strip().splitlines() or [f"ssh exit {res.rc}"])[-1]
        return measure.parse_node(node, sections, opts)

    def suites(self, nodes: Sequence[NodeExpect], opts: suite.SuiteOptions) -> dict[str, suite.NodeSample]:
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            return dict(
                zip([n.name for n in nodes], pool.map(lambda n: self.node_suite(n, opts), nodes), strict=True)
            )

    # -- pairs ----------------------------------------------------------------------------------------
    def pair_test(self, p: Pair, a: NodeExpect, b: NodeExpect, opts: suite.SuiteOptions) -> Measurement:
        """`ib_write_bw` from `a` (client) to `b` (server) over rail `p.rail`, host memory on both ends (a
        pair isolates the network: NICs, cables, leaves; GPUDirect is the loopback test's business)."""
        comp, detail = f"rail{p.rail}", {"kind": p.kind, "leaves": list(p.leaves)}
        for n in (p.a, p.b):
            if n in self.unreachable:
                return Measurement(
                    "ib_write_bw.pair",
                    p.a,
                    comp,
                    p.b,
                    unit="Gb/s",
                    error=f"{n} unreachable: {self.unreachable[n]}",
                    detail=detail,
                )
        port, t = 18600 + p.rail, opts.ib_timeout_s
        ra, rb = a.rail(p.rail), b.rail(p.rail)
        server = subprocess.Popen(
            self.ssh_argv(p.b, wrap(argv("ib_write_bw", *suite.ib_args(b, rb, port, opts, cuda=False)), t)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        ready, lines = threading.Event(), list[str]()
        reader = threading.Thread(target=_watch, args=(server, ready, lines), daemon=True)
        reader.start()
        try:
            if not ready.wait(READY_S) or not any("Waiting for client" in x for x in lines):
                gone = _server_missing(server)
                if gone is not None:
                    return _pair_not_run(p, gone, p.b, detail)
                said = "".join(lines)[-160:].strip() or "no output"
                why = f"server not listening after {READY_S:.0f} s ({said})"
                return unmeasured(
                    "ib_write_bw.pair",
                    p.a,
                    "ib_write_bw",
                    f"on {p.b}: {why}",
                    comp,
                    p.b,
                    detail | {"on": p.b},
                )
            cmd = argv("ib_write_bw", *suite.ib_args(a, ra, port, opts, cuda=False), rb.ip)
            res = self.run(p.a, wrap(cmd, t), t)
            gone = missing("ib_write_bw", res.rc, res.out, res.err)
            if gone is not None:
                return _pair_not_run(p, gone, p.a, detail)
        finally:
            try:
                server.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            reader.join(timeout=5)
        return _pair_measurement(p, res, detail)

    def pairs(
        self, rounds: Sequence[Sequence[Pair]], expects: Mapping[str, NodeExpect], opts: suite.SuiteOptions
    ) -> list[Measurement]:
        out: list[Measurement] = []
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            for rnd in rounds:
                out += pool.map(lambda p: self.pair_test(p, expects[p.a], expects[p.b], opts), rnd)
        return out

    # -- groups ---------------------------------------------------------------------------------------
    def group_allreduce(
        self, group: Sequence[str], launcher: Launcher, gpus: int, opts: suite.SuiteOptions
    ) -> Measurement:
        label = f"group:{group[0]}+{len(group) - 1}"
        members = ",".join(group)
        down = [n for n in group if n in self.unreachable]
        if down:
            return Measurement(
                "all_reduce.group", label, peer=members, unit="GB/s", error=f"{', '.join(down)} unreachable"
            )
        cmd = ["all_reduce_perf", *opts.allreduce.split(), "-g", str(gpus)]
        argv = launcher.argv(group, cmd)
        env = dict(os.environ) | launcher.env
        res = run_local(
            ["timeout", "-k", "5", str(opts.nccl_timeout_s), *argv], opts.nccl_timeout_s + GRACE_S, env=env
        )
        gone = missing("all_reduce_perf", res.rc, res.out, res.err)
        if gone is not None:
            return Measurement(
                "all_reduce.group",
                label,
                peer=members,
                unit="GB/s",
                error=cannot_certify(gone),
                detail={"missing": gone.name, "install": gone.install},
            )
        return measure.allreduce_measurement(
            "all_reduce.group",
            label,
            res.rc,
            res.out,
            res.err,
            peer=members,
            timeout_s=opts.nccl_timeout_s,
            tool=f"all_reduce_perf (via {argv[0]})",
        )

    def groups(
        self,
        groups: Sequence[Sequence[str]],
        launcher: Launcher,
        gpus: Callable[[str], int],
        opts: suite.SuiteOptions,
    ) -> list[Measurement]:
        """Groups one after the other: groups share nodes (chunks and strided groups)."""
        return [self.group_allreduce(g, launcher, gpus(g[0]), opts) for g in groups]


def _watch(proc: subprocess.Popen[str], ready: threading.Event, lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "Waiting for client" in line:
            ready.set()
    ready.set()  # ended without listening: the caller reads `lines`


def _server_missing(server: subprocess.Popen[str]) -> Tool | None:
    """The tool a pair's server lacked, when it exited at once (e.g. exit 127, ib_write_bw not found)."""
    try:
        rc = server.wait(timeout=2)
    except subprocess.TimeoutExpired:
        return None
    err = server.stderr.read() if server.stderr is not None else ""
    return missing("ib_write_bw", rc, "", err)


def _pair_not_run(p: Pair, tool: Tool, on: str, detail: dict[str, Any]) -> Measurement:
    """A pair test whose tool is missing on node ``on``: an error for that node, no suspect."""
    return Measurement(
        "ib_write_bw.pair",
        p.a,
        f"rail{p.rail}",
        p.b,
        unit="Gb/s",
        error=f"{on}: {cannot_certify(tool)}",
        detail=detail | {"missing": tool.name, "install": tool.install, "on": on},
    )


def _pair_measurement(p: Pair, res: Result, detail: dict[str, Any]) -> Measurement:
    """The client's run: a finished table, or a failure perftest reported itself (evidence for the pair
    localisation); a crash, a hang or output cut short measured nothing (an error on the client node)."""
    comp = f"rail{p.rail}"
    try:
        bw = perftest.parse_bw(res.out) if res.out.strip() else None
    except ParseError:
        bw = None
    usable = bw is not None and bool(bw.header.errors or (bw.header.completed and bw.rows))
    why = why_unmeasured(res.rc, res.out, res.err, usable)
    if why:
        return unmeasured("ib_write_bw.pair", p.a, "ib_write_bw", why, comp, p.b, detail | {"on": p.a})
    assert bw is not None
    if bw.header.errors or not bw.header.completed or not bw.rows:
        why = "; ".join(bw.header.errors) or "did not complete"
        return Measurement("ib_write_bw.pair", p.a, comp, p.b, unit="Gb/s", error=why[:300], detail=detail)
    row = max(bw.rows, key=lambda x: x.bytes)
    return Measurement(
        "ib_write_bw.pair",
        p.a,
        comp,
        p.b,
        value=round(row.bw_average_gbps, 3),
        unit="Gb/s",
        detail=detail | {"bytes": row.bytes},
    )
