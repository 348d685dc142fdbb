"""The tools and daemons certification and burn-in run on a node, and which role and tag put them there.

A missing tool is never a hardware verdict: a check whose tool is absent (exit 127, ``not found``) or
whose daemon is down (``dcgmi`` cannot reach the DCGM host engine) is verdict ``error`` with the text
:func:`cannot_certify` returns — ``cannot certify: nvbandwidth missing (install: role benchmarks, tag
benchmarks)`` — and burn-in suspects no component from a test that did not run.

Role and tag names must exist in ``playbooks/`` (``tests/unit/certify/test_tools.py`` checks the roles
that are present).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MISSING_PREFIX = "cannot certify:"


@dataclass(frozen=True)
class Tool:
    """A program (or daemon) on the node: the package that ships it, the role and tag that install it."""

    name: str
    package: str
    role: str
    tag: str
    daemon: bool = False  # a service that must run (the program itself may be present)

    @property
    def install(self) -> str:
        if not self.role:
            return "no clusterforge role installs it: the base system must provide it"
        return f"role {self.role}, tag {self.tag}"


_TOOLS = (
    # benchmarks role: nccl-tests and nvbandwidth at pinned versions
    Tool("nvbandwidth", "nvbandwidth", "benchmarks", "benchmarks"),
    Tool("all_reduce_perf", "nccl-tests", "benchmarks", "benchmarks"),
    # rdma role: RDMA user space (perftest, infiniband-diags, ibverbs utilities), mlnx-tools, MFT
    Tool("ib_write_bw", "perftest", "rdma", "rdma_packages"),
    Tool("ibstat", "infiniband-diags", "rdma", "rdma_packages"),
    Tool("smpquery", "infiniband-diags", "rdma", "rdma_packages"),
    Tool("ibv_devinfo", "ibverbs-utils", "rdma", "rdma_packages"),
    Tool("mlnx_qos", "mlnx-tools", "rdma", "roce_qos"),
    Tool("mlxconfig", "mft", "rdma", "mlxconfig"),
    Tool("mlxfwmanager", "mft", "rdma", "mlxconfig"),
    Tool("ofed_info", "ofed-scripts (DOCA-OFED, MLNX_OFED)", "rdma", "rdma_packages"),
    # nvidia_gpu role: driver, DCGM
    Tool("nvidia-smi", "nvidia driver utilities", "nvidia_gpu", "gpu_driver"),
    Tool("dcgmi", "datacenter-gpu-manager", "nvidia_gpu", "dcgm"),
    Tool("nv-hostengine", "datacenter-gpu-manager (service nvidia-dcgm)", "nvidia_gpu", "dcgm", daemon=True),
    Tool("clusterforge-acs", "the role's ACS script", "nvidia_gpu", "acs"),
    # monitoring role: the passive health check (a script the role copies; certification runs it once)
    Tool("clusterforge-healthcheck", "the role's health check script", "monitoring", "health_check"),
    # lldpd role: the LLDP agent the per-node cabling check reads
    Tool("lldpcli", "lldpd", "lldpd", "lldpd"),
    # os_tuning role: chrony, tuned and the node tools of every node (ethtool: the link-counters check's
    # `ethtool -S` of the RoCE rails)
    Tool("chronyc", "chrony", "os_tuning", "timesync"),
    Tool("ethtool", "ethtool", "os_tuning", "os_tuning_packages"),
    Tool("tuned-adm", "tuned", "os_tuning", "tuned"),
    # storage role: fio (full-tier I/O floors), the GDS tools (gdscheck, from nvidia-gds)
    Tool("fio", "fio", "storage", "storage_packages"),
    Tool("gdscheck", "nvidia-gds", "storage", "storage_gds"),
)
TOOLS: dict[str, Tool] = {t.name: t for t in _TOOLS}

#: shells' "cannot find the program" lines: dash `sh: 1: X: not found`, bash `bash: line 1: X: command not
#: found`, busybox `sh: X: not found`, coreutils `timeout: failed to run command 'X': No such file …`
_NOT_FOUND = (
    re.compile(r"^(?:[\w./-]+: )?(?:line )?(?:\d+: )?(?P<tool>[^\s:]+): (?:command )?not found\s*$", re.M),
    re.compile(r"failed to run command ['‘](?P<tool>[^'’]+)['’]: No such file or directory"),
)
#: launchers that could not start the program on a node: Slurm's slurmstepd, Open MPI's mpirun, and
#: CPython given a script path that does not exist (exit 2; seen on the lent H100 machine, Python 3.12)
_LAUNCH_FAILED = (
    re.compile(r"^python[\d.]*: can't open file ['‘](?P<tool>[^'’]+)['’]: \[Errno 2\]", re.M),
    re.compile(r"execve\(\): (?P<tool>[^\s:]+): No such file or directory"),
    re.compile(r"was unable to find the specified executable file"),
)
#: dcgmi when nv-hostengine does not run (DCGM's Command::DoExecuteConnectionFailure and dcgmi's connect)
_DCGM_DOWN = re.compile(
    r"Unable to connect to host engine|unable to establish a connection to the specified host", re.I
)
RC_NOT_FOUND = 127


def tool_of(command: str) -> str:
    """The program a command line runs first (``nvidia-smi`` of ``nvidia-smi topo -m``)."""
    words = command.split()
    return words[0].strip("'\"") if words else command


def lookup(name: str) -> Tool:
    """The tool by name (a path's basename); one no role installs has no role and tag."""
    base = name.rsplit("/", 1)[-1]
    return TOOLS.get(base) or Tool(base, base, "", "")


def missing(command: str, rc: int | None, out: str = "", err: str = "") -> Tool | None:
    """The tool or daemon a command's result shows to be missing, else None.

    Exit 127 with a shell's "not found" line names the program (in a compound command, the one that
    was missing); exit 127 without one names the command's first program. A launcher (srun, mpirun) that
    could not find the program names it, and ``dcgmi`` that cannot reach the host engine names the
    daemon, whatever the exit code."""
    text = f"{err}\n{out}"
    if tool_of(command) == "dcgmi" and _DCGM_DOWN.search(text):
        return TOOLS["nv-hostengine"]
    for pattern in _LAUNCH_FAILED:
        m = pattern.search(text)
        if m:
            return lookup(m.groupdict().get("tool") or tool_of(command))
    if rc != RC_NOT_FOUND:
        return None
    for pattern in _NOT_FOUND:
        m = pattern.search(text)
        if m:
            return lookup(m.group("tool"))
    return lookup(tool_of(command))


def cannot_certify(tool: Tool) -> str:
    """``cannot certify: nvbandwidth missing (install: role benchmarks, tag benchmarks)``."""
    what = f"{tool.name} not running" if tool.daemon else f"{tool.name} missing"
    verb = "install and start" if tool.daemon else "install"
    return (
        f"{MISSING_PREFIX} {what} ({verb}: {tool.install})"
        if tool.role
        else f"{MISSING_PREFIX} {what} ({tool.install})"
    )


def cannot_run(tool: str, why: str) -> str:
    """``cannot certify: nvbandwidth timed out after 600 s``: the tool was there but measured nothing (it
    crashed, hung or printed nothing a parser recognises), so no hardware is judged from it."""
    return f"{MISSING_PREFIX} {tool} {why}"


_CANNOT = re.compile(re.escape(MISSING_PREFIX) + r" [^()]*? (?:missing|not running) \([^()]*\)")


def missing_tools(messages: Iterable[str]) -> list[str]:
    """The distinct ``cannot certify: … (install: …)`` clauses in check messages, in order."""
    out: dict[str, None] = {}
    for msg in messages:
        m = _CANNOT.search(msg or "")
        if m:
            out[m.group(0)] = None
    return list(out)
