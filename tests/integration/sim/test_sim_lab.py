"""The simulator inside real lab nodes: kernel views at real paths, the simulated NVIDIA packages from the
lab's vendor repository, and every fault kind visible through the real command path (SSH) and cleared.

The two nodes used are reset to the pristine image; the product's own roles (nvidia_gpu, nccl, benchmarks:
`clusterforge provision --tags ... --no-reboot`) install the packages, nothing is installed by hand; the
nodes are reset again at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusterforge.hw import ibstat, ibv_devinfo, mlnx_qos, nccl_tests, nvbandwidth, perftest, xid
from clusterforge.hw import nvidia_smi as ns
from clusterforge.lab.sim import faults, paths
from clusterforge.lab.sim.state import initial_state

pytestmark = pytest.mark.lab
# A bare node's software as provisioning puts it there: the site's repositories (the lab's Debian proxy and
# vendor repository), the NVIDIA stack (driver, fabric manager, DCGM), NCCL, the benchmark tools and the RDMA
# stack's packages (doca-ofed: ibstat, perftest, mlnx_qos, mlxconfig); no OS tuning, no reboot.
ROLE_TAGS = "repositories,nvidia_gpu,nccl,benchmarks,rdma_packages"


class Node:
    def __init__(self, lab: Any, name: str) -> None:
        self.lab, self.name = lab, name
        self.plan = lab.plan.node(name)
        self.rails = [SimpleNamespace(**r) for r in self.plan.raw.get("rails", [])]
        self.mgmt_ip = self.plan.mgmt_ip

    def ssh(self, cmd: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.lab.ssh_argv(self.name, cmd), capture_output=True, text=True, timeout=timeout, check=False
        )

    def ok(self, cmd: str, timeout: float = 60.0) -> str:
        r = self.ssh(cmd, timeout)
        assert r.returncode == 0, f"{self.name}: {cmd}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r.stdout

    def sh(self, cmd: str, timeout: float = 300.0) -> str:
        r = self.lab.exec(self.name, ["sh", "-c", cmd], timeout=timeout)
        assert r.returncode == 0, f"{self.name}: {cmd}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
        return str(r.stdout)

    def fault(self, kind: str, clear: bool = False, **params: Any) -> None:
        faults.apply(self.lab, self.name, kind, clear=clear, **params)

    def reboot(self) -> None:
        self.lab.exec(self.name, ["systemctl", "reboot"], timeout=30)
        time.sleep(3)
        self.lab.wait_ssh([self.name], timeout=180)


def _prepare(lab: Any, n: Node) -> None:
    """State, if the lab did not write it before the first boot (simulated hardware, not a package)."""
    if lab.exec(n.name, ["test", "-f", paths.STATE]).returncode != 0:
        st = initial_state(lab.plan.raw, n.name)
        r = lab.exec(
            n.name,
            ["sh", "-c", f"mkdir -p {paths.STATE.rsplit('/', 1)[0]} && cat > {paths.STATE}"],
            input=json.dumps(st),
        )
        assert r.returncode == 0, r.stderr
        n.sh("systemctl start clusterforge-sim-boot.service clusterforge-sim-kernel.service")


def _provision(plan_path: Path, names: list[str]) -> None:
    """The roles install the packages from the lab's vendor repository, as `clusterforge provision --tags
    nvidia_gpu,nccl,benchmarks --limit A,B --no-reboot` does (services started, nvidia_peermem loaded)."""
    from rich.console import Console

    from clusterforge import targets
    from clusterforge.run.provision import Options, provision

    doc = json.loads(plan_path.read_text())
    opts = Options(limit=",".join(names), tags=ROLE_TAGS, no_reboot=True)
    env = targets.for_plan(doc).environment(doc)
    with open(os.devnull, "w") as sink:
        report = provision(doc, plan_path.parent, opts, None, Console(file=sink, width=200), env)
    failed = {h.host: f"{h.failed_task}: {h.message}" for h in report.failed}
    assert report.ok, f"provisioning {names} with tags {ROLE_TAGS} failed: {failed}"


@pytest.fixture(scope="module")
def pair(lab: Any, lab_plan_path: Path) -> Iterator[tuple[Node, Node]]:
    by_fabric: dict[str, list[str]] = {}
    for n in lab.plan.nodes:
        by_fabric.setdefault(n.fabric, []).append(n.name)
    names = next((v for v in by_fabric.values() if len(v) >= 2), None)
    if names is None:
        pytest.skip("no two nodes share a fabric")
    if not (lab.repo.root / "nvidia/dists/stable/Release").exists():
        lab.repo.build()
        lab.repo.start()
    a, b = Node(lab, names[0]), Node(lab, names[1])
    for n in (a, b):
        # pristine first: earlier modules may have left the node provisioned
        lab.reset(n.name)
        _prepare(lab, n)
    _provision(lab_plan_path, [a.name, b.name])
    yield a, b
    for n in (a, b):
        lab.reset(n.name)


def test_nvidia_stack_from_the_lab_repo(pair: tuple[Node, Node]) -> None:
    a, _ = pair
    q = ns.parse_q(a.ok("nvidia-smi -q"))
    sku = a.lab.plan.sku(a.plan.sku)["gpu"]
    assert q.driver_version == "570.133.20" and len(q.gpus) == sku["count"]
    assert all(g.persistence_mode == "Enabled" for g in q.gpus)  # nvidia-persistenced runs
    if sku["nvswitch"]:
        assert {g.fabric_state for g in q.gpus} == {"Completed"}  # nvidia-fabricmanager ran
    assert a.ok("systemctl is-active nvidia-dcgm").strip() == "active"
    assert "software" in a.ok("dcgmi diag -r 1")
    assert "nvidia " in a.ok("lsmod") and "nvidia_uvm" not in a.ok("lsmod")  # installed, not rebooted
    a.ok("nvbandwidth -t host_to_device_memcpy_ce")
    assert "nvidia_uvm" in a.ok("lsmod")  # cuInit loads it (nvidia-modprobe -u)


def test_kernel_views_at_real_paths(pair: tuple[Node, Node]) -> None:
    a, _ = pair
    rail = a.rails[0]
    assert a.ok(f"cat /sys/class/infiniband/{rail.hca}/ports/1/state").strip() == "4: ACTIVE"
    assert a.ok(f"cat /sys/class/infiniband/{rail.hca}/device/numa_node").strip() == str(rail.numa)
    assert a.ok("cat /sys/class/net/lo/mtu").strip() == "65536"  # real attributes still there
    a.ok("sysctl -w kernel.numa_balancing=0 && test $(cat /proc/sys/kernel/numa_balancing) = 0")
    a.ok(
        "echo always > /sys/kernel/mm/transparent_hugepage/enabled; sleep 0.3; "
        "grep -q '\\[always\\]' /sys/kernel/mm/transparent_hugepage/enabled"
    )
    a.ok("cpupower --help >/dev/null 2>&1 || true; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    a.ok("echo performance > /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    a.ok(
        f"mkdir -p /sys/kernel/config/rdma_cm/{rail.hca} && "
        f"echo 106 > /sys/kernel/config/rdma_cm/{rail.hca}/ports/1/default_roce_tos"
    )
    a.ok(
        "modprobe nvidia-peermem && test -f /sys/module/nvidia_peermem/version "
        "&& lsmod | grep -q nvidia_peermem"
    )
    if rail.link_layer == "Ethernet":
        a.ok(
            f"echo 1 > /sys/class/net/{rail.netdev}/ecn/roce_np/enable/3 && "
            f"test $(cat /sys/class/net/{rail.netdev}/ecn/roce_np/enable/3) = 1"
        )


def test_cmdline_after_reboot_and_faults_persist(pair: tuple[Node, Node]) -> None:
    a, _ = pair
    a.ok(
        "echo 'GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1 "
        "hugepagesz=1G hugepages=4\"' > /etc/default/grub.d/90-test.cfg && update-grub"
    )
    assert "intel_idle.max_cstate=1" not in a.ok("cat /proc/cmdline")
    a.ok(f"mlnx_qos -i {a.rails[0].netdev} --trust dscp")
    a.fault("gpu-missing", gpu=3)
    a.reboot()
    assert "intel_idle.max_cstate=1" in a.ok("cat /proc/cmdline")
    assert a.ok("cat /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages").strip() == "4"
    assert "Hugetlb:         4194304 kB" in a.ok("grep Hugetlb /proc/meminfo")  # default size stays 2M
    assert ns.parse_q(a.ok("nvidia-smi -q")).attached_gpus == len(a.rails) - 1
    assert mlnx_qos.parse(a.ok(f"mlnx_qos -i {a.rails[0].netdev}")).trust_state == "pcp"
    a.fault("gpu-missing", clear=True)
    a.ok("rm /etc/default/grub.d/90-test.cfg && update-grub")


# sshd-stopped, hung-tool, slow-nic: their own tests below; cable-swap crosses two InfiniBand rails' far ends
# (the pair here is RoCE, where LLDP comes from the lab's emulator): tests/unit/sim/test_smpquery.py and the
# cabling check fed by the simulator (tests/unit/validators/test_cabling_on_sim.py)
# pause-storm: seen in `ethtool -S`, which os_tuning installs (not among this module's roles, so the pair has
# no ethtool): shown through the check that reads it, tests/integration/certify/test_link_counters_lab.py
@pytest.mark.parametrize(
    "kind",
    [
        k
        for k in faults.KINDS
        if k not in ("sshd-stopped", "hung-tool", "slow-nic", "cable-swap", "pause-storm")
    ],
)
def test_fault_visible_and_cleared(pair: tuple[Node, Node], kind: str) -> None:
    a, _ = pair
    rail = a.rails[1]
    ctr = f"/sys/class/infiniband/{rail.hca}/ports/1/" + (
        "counters/symbol_error" if rail.link_layer == "InfiniBand" else "hw_counters/out_of_sequence"
    )
    checks = {
        "gpu-missing": ("nvidia-smi -q", lambda o: ns.parse_q(o).attached_gpus < len(a.rails)),
        "row-remap-pending": (
            "nvidia-smi -q -d ROW_REMAPPER",
            lambda o: ns.parse_q(o, partial=True).gpus[0].remapped_rows.pending,
        ),
        "ecc-uncorrectable": (
            "nvidia-smi -q -d ECC",
            lambda o: ns.parse_q(o, partial=True).gpus[0].ecc_volatile.dram_uncorrectable > 0,
        ),
        "xid-79": ("dmesg -T", lambda o: any(e.xid == 79 for e in xid.parse(o))),
        "rail-down": (f"ibstat {rail.hca}", lambda o: ibstat.parse(o)[0].ports[0].state == "Down"),
        "rail-half-rate": (
            f"ibstat {rail.hca}",
            lambda o: ibstat.parse(o)[0].ports[0].rate_gbps < rail.speed_gbps,
        ),
        "pfc-off": (
            f"mlnx_qos -i {rail.netdev} --pfc 0,0,0,1,0,0,0,0",
            lambda o: not any(mlnx_qos.parse(o).pfc_enabled or ()),
        ),
        "mtu-reverted": (f"cat /sys/class/net/{rail.netdev}/mtu", lambda o: o.strip() == "1500"),
        "link-errors": (  # the counter rises while the fault is active (read every 0.5 s, at most 30 s)
            f"a=$(cat {ctr}); for i in $(seq 60); do sleep 0.5; b=$(cat {ctr}); "
            f'[ "$b" -gt "$a" ] && {{ echo "rising $a -> $b"; exit 0; }}; done; echo "flat at $a"',
            lambda o: o.startswith("rising"),
        ),
        "slow-gpu": (
            "nvbandwidth -t host_to_device_memcpy_ce",
            lambda o: (
                min(
                    v
                    for v in nvbandwidth.parse(o).testcases["host_to_device_memcpy_ce"].matrix[0].values()
                    if v
                )
                < 40
            ),
        ),
        "noisy": ("all_reduce_perf -b 8G -e 8G -g 8", lambda o: nccl_tests.parse(o).max_busbw > 0),
        "service-stopped": (
            "systemctl is-active nvidia-persistenced || true",
            lambda o: o.strip() != "active",
        ),
    }
    cmd, faulted = checks[kind]
    params = (
        {"gpu": 0}
        if faults.KINDS[kind][1] == "gpu"
        else {"rail": 1}
        if faults.KINDS[kind][1] == "rail"
        else {}
    )
    if kind == "mtu-reverted":
        a.ok(f"ip link set {rail.netdev} mtu 9000")
    a.fault(kind, **params)
    try:
        time.sleep(0.5)
        assert faulted(a.ok(cmd, timeout=120)), kind
        if kind == "mtu-reverted" and rail.link_layer == "Ethernet":
            assert ibv_devinfo.parse(a.ok(f"ibv_devinfo -d {rail.hca}"))[0].ports[0].active_mtu == 1024
    finally:
        a.fault(kind, clear=True)
    time.sleep(0.5)
    if kind not in ("noisy", "xid-79"):
        assert not faulted(a.ok(cmd, timeout=120)), f"{kind} still visible after clearing"


def test_hung_tool(pair: tuple[Node, Node]) -> None:
    a, _ = pair
    a.fault("hung-tool")
    try:
        assert a.ssh("timeout 5 nvidia-smi -q").returncode == 124
    finally:
        a.fault("hung-tool", clear=True)
    assert a.ssh("timeout 20 nvidia-smi -L").returncode == 0


def test_sshd_stopped(pair: tuple[Node, Node]) -> None:
    a, _ = pair
    a.fault("sshd-stopped")
    try:
        time.sleep(1)
        assert a.ssh("true", timeout=20).returncode == 255
    finally:
        a.fault("sshd-stopped", clear=True)
    a.lab.wait_ssh([a.name], timeout=60)


def test_ib_write_bw_between_nodes_and_slow_nic(pair: tuple[Node, Node]) -> None:
    a, b = pair
    hca = a.rails[2].hca

    def run() -> float:
        server = subprocess.Popen(
            b.lab.ssh_argv(b.name, f"ib_write_bw -d {hca} -p 18600 --report_gbits"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        out = a.ok(f"ib_write_bw -d {hca} -p 18600 -s 8388608 --report_gbits {b.mgmt_ip}")
        server.communicate(timeout=60)
        return perftest.parse_bw(out).rows[-1].bw_average_gbps

    floor = a.lab.plan.sku(a.plan.sku)["thresholds"]["ib_write_bw_gbps"]["value"]
    assert run() > floor
    b.fault("slow-nic", rail=2)
    try:
        assert run() < floor  # the peer's fault shows on this end, as a real slow link would
    finally:
        b.fault("slow-nic", clear=True)
