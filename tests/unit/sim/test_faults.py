"""One test per fault kind: the fault changes what the real parsers see, clearing restores it, and faults
survive a reboot."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clusterforge.hw import (
    dcgmi,
    ibmad,
    ibstat,
    ibv_devinfo,
    mlnx_qos,
    nccl_tests,
    nvbandwidth,
    rdma_link,
    xid,
)
from clusterforge.hw import nvidia_smi as ns
from clusterforge.lab.sim import faults
from clusterforge.plan import Plan

from .conftest import SimNode


def _q(n: SimNode) -> ns.NvidiaSmiQ:
    return ns.parse_q(n.ok("nvidia-smi", "-q"))


def test_every_kind_has_a_test() -> None:
    tested = {name.removeprefix("test_").replace("_", "-") for name in globals() if name.startswith("test_")}
    assert set(faults.KINDS) <= tested


def test_gpu_missing(node: SimNode) -> None:
    node.fault("gpu-missing", gpu=7)
    q = _q(node)
    assert q.attached_gpus == 7 and "00000000:DB:00.0" not in {g.bus_id for g in q.gpus}
    assert len(ns.parse_topo(node.ok("nvidia-smi", "topo", "-m")).gpus) == 7
    rc, out, _ = node.run("all_reduce_perf", "-g", "8")
    assert rc != 0 and "invalid device ordinal" in out
    assert len(nvbandwidth.parse(node.ok("nvbandwidth", "-t", "host_to_device_memcpy_ce")).devices) == 7
    node.reboot()
    node.services_up()
    assert _q(node).attached_gpus == 7  # persists across reboots
    node.clear("gpu-missing")
    assert _q(node).attached_gpus == 8


def test_row_remap_pending(node: SimNode) -> None:
    node.fault("row-remap-pending", gpu=1)
    rr = _q(node).gpus[1].remapped_rows
    assert rr is not None and rr.pending is True and rr.correctable == 1
    assert [e.xid for e in xid.parse(node.ok("dmesg"))] == [63]
    d = dcgmi.parse_diag(node.run("dcgmi", "diag", "-r", "1")[1])
    assert d.verdict == "Fail"
    node.ok("nvidia-smi", "-r", "-i", "1")  # a GPU reset performs the remap, as on a real GPU
    rr = _q(node).gpus[1].remapped_rows
    assert rr is not None and rr.pending is False and rr.correctable == 1
    assert "row-remap-pending" not in node.state["faults"]


def test_ecc_uncorrectable(node: SimNode) -> None:
    node.fault("ecc-uncorrectable", gpu=4)
    g = _q(node).gpus[4]
    assert g.ecc_volatile is not None and g.ecc_volatile.dram_uncorrectable == 2
    assert {e.xid for e in xid.parse(node.ok("dmesg"))} == {48, 94}
    rows = ns.parse_query_csv(
        node.ok("nvidia-smi", "--query-gpu=ecc.errors.uncorrected.volatile.dram", "--format=csv,noheader"),
        ["ecc.errors.uncorrected.volatile.dram"],
    )
    assert [r["ecc.errors.uncorrected.volatile.dram"] for r in rows] == [0, 0, 0, 0, 2, 0, 0, 0]
    assert dcgmi.parse_diag(node.run("dcgmi", "diag", "-r", "2")[1]).verdict == "Fail"
    node.clear("ecc-uncorrectable")
    assert _q(node).gpus[4].ecc_volatile.dram_uncorrectable == 0  # type: ignore[union-attr]


def test_xid_79(node: SimNode) -> None:
    node.fault("xid-79", gpu=0)
    events = xid.parse(node.ok("dmesg", "-T"))
    assert [(e.xid, e.pci_bus_id) for e in events] == [(79, "0000:19:00")]
    rc, out, err = node.run("nvidia-smi", "-q")
    assert rc == 0 and ns.parse_q(out).attached_gpus == 7 and "Unable to determine the device handle" in err
    node.reboot()
    assert [e.xid for e in xid.parse(node.ok("dmesg"))] == [79]  # still broken after a reboot
    node.clear("xid-79")
    node.reboot()
    assert xid.parse(node.ok("dmesg")) == []


def _port(n: SimNode, hca: str) -> ibstat.IbPort:
    return ibstat.parse(n.ok("ibstat", hca))[0].ports[0]


def test_rail_down(ibnode: SimNode) -> None:
    ibnode.fault("rail-down", rail=2)
    p = _port(ibnode, "mlx5_2")
    assert (p.state, p.physical_state) == ("Down", "Polling")
    assert _port(ibnode, "mlx5_1").state == "Active"
    assert ibnode.read("/sys/class/infiniband/mlx5_2/ports/1/state").strip() == "1: DOWN"
    assert ibnode.read("/sys/class/infiniband/mlx5_2/ports/1/counters/link_downed").strip() == "1"
    assert [lk.state for lk in rdma_link.parse(ibnode.ok("rdma", "link"))][2] == "DOWN"
    assert ibv_devinfo.parse(ibnode.ok("ibv_devinfo", "-d", "mlx5_2"))[0].ports[0].state == "PORT_DOWN"
    ibnode.clear("rail-down")
    assert _port(ibnode, "mlx5_2").state == "Active"
    assert ibnode.read("/sys/class/infiniband/mlx5_2/ports/1/state").strip() == "4: ACTIVE"


def test_rail_half_rate(ibnode: SimNode) -> None:
    ibnode.fault("rail-half-rate", rail="all")
    assert {_port(ibnode, f"mlx5_{i}").rate_gbps for i in range(8)} == {200}
    assert ibnode.read("/sys/class/infiniband/mlx5_0/ports/1/rate").strip() == "200 Gb/sec (2X NDR)"
    ibnode.clear("rail-half-rate")
    assert _port(ibnode, "mlx5_0").rate_gbps == 400


def test_pfc_off(node: SimNode) -> None:
    node.ok("mlnx_qos", "-i", "enp94s0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0")
    node.fault("pfc-off", rail=3)
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp94s0np0", "--pfc", "0,0,0,1,0,0,0,0"))
    assert q.trust_state == "dscp" and not any(q.pfc_enabled or ())  # set, but it does not stick
    node.clear("pfc-off")
    assert mlnx_qos.parse(node.ok("mlnx_qos", "-i", "enp94s0np0")).pfc_enabled[3]  # type: ignore[index]


def test_mtu_reverted(node: SimNode) -> None:
    assert ibv_devinfo.parse(node.ok("ibv_devinfo", "-d", "mlx5_0"))[0].ports[0].active_mtu == 4096
    node.fault("mtu-reverted", rail=0)
    assert ibv_devinfo.parse(node.ok("ibv_devinfo", "-d", "mlx5_0"))[0].ports[0].active_mtu == 1024
    assert ibv_devinfo.parse(node.ok("ibv_devinfo", "-d", "mlx5_1"))[0].ports[0].active_mtu == 4096
    node.clear("mtu-reverted")
    assert ibv_devinfo.parse(node.ok("ibv_devinfo", "-d", "mlx5_0"))[0].ports[0].active_mtu == 4096


def test_slow_gpu(node: SimNode) -> None:
    thr = node.plan["skus"][node.sku]["thresholds"]
    node.fault("slow-gpu", gpu=3)
    nb = nvbandwidth.parse(node.ok("nvbandwidth", "-t", "host_to_device_memcpy_ce"))
    h2d = nb.testcases["host_to_device_memcpy_ce"].matrix[0]
    assert h2d[3] is not None and h2d[3] < thr["h2d_gbs"]["value"] < min(
        v for k, v in h2d.items() if k != 3 and v
    )
    r = nccl_tests.parse(node.ok("all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8"))
    assert r.max_busbw < thr["allreduce_busbw_gbs"]["value"]
    assert _q(node).gpus[3].link_width_current == 8
    node.clear("slow-gpu")
    r = nccl_tests.parse(node.ok("all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8"))
    assert r.max_busbw > thr["allreduce_busbw_gbs"]["value"]


def test_slow_nic(node: SimNode) -> None:
    # the two-node exchange itself is covered in test_nic_tools; here the factor the node reports
    from clusterforge.lab.sim import perf
    from clusterforge.lab.sim import state as S

    node.fault("slow-nic", rail=5, factor=0.5)
    st = node.state
    assert perf.nic_factor(st, st["nics"][5]) == 0.5 and perf.nic_factor(st, st["nics"][4]) == 1.0
    with node.env():
        assert S.load()["faults"]["slow-nic"]["factor"] == "0.5"


def test_noisy(node: SimNode) -> None:
    thr = node.plan["skus"][node.sku]["thresholds"]["allreduce_busbw_gbs"]["value"]

    def spread() -> list[float]:
        return [
            nccl_tests.parse(node.ok("all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8")).max_busbw
            for _ in range(8)
        ]

    calm = spread()
    node.fault("noisy")
    noisy = spread()
    assert min(noisy) > thr  # in spec ...
    assert max(noisy) - min(noisy) > max(calm) - min(calm)  # ... but with more variance


def test_sshd_stopped(node: SimNode) -> None:
    assert node.run("fault", "check", "sshd-stopped")[0] == 0
    node.fault("sshd-stopped")
    assert node.run("fault", "check", "sshd-stopped")[0] == 1  # the ssh.service drop-in's ExecStartPre
    assert (node.root / "var/lib/clusterforge-sim/faults/sshd-stopped").exists()
    node.clear("sshd-stopped")
    assert node.run("fault", "check", "sshd-stopped")[0] == 0


def test_service_stopped(node: SimNode) -> None:
    node.fault("service-stopped", service="persistenced,fabricmanager")
    assert (node.root / "var/lib/clusterforge-sim/faults/service-stopped-fabricmanager").exists()
    rc, _, err = node.run("nvidia-persistenced")
    assert rc == 1 and "failed to initialize" in err
    assert node.run("nv-fabricmanager", "-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg")[0] == 1
    rc, _, err = node.run("fault", "set", "service-stopped", "service=bogus")
    assert rc == 2
    node.clear("service-stopped")
    assert not (node.root / "var/lib/clusterforge-sim/faults/service-stopped-persistenced").exists()


def test_hung_tool(node: SimNode) -> None:
    node.fault("hung-tool")
    env = {"CLUSTERFORGE_SIM_ROOT": str(node.root), "PATH": "/usr/bin:/bin"}
    p = subprocess.Popen(
        [sys.executable, "-m", "clusterforge.lab.sim", "nvidia-smi", "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    node.clear("hung-tool")
    assert _q(node).attached_gpus == 8


def test_unknown_kind_and_params(node: SimNode) -> None:
    assert node.run("fault", "set", "melted")[0] == 2
    assert node.run("fault", "set", "slow-gpu", "gpu=42")[0] == 2
    assert node.run("fault", "set", "slow-gpu", "oops")[0] == 2
    node.fault("noisy")
    node.fault("slow-gpu", gpu=1)
    node.ok("fault", "clear", "all")
    assert node.state["faults"] == {}


def test_periodic_enforcement_holds_the_lock_so_a_clear_is_not_undone(node: SimNode) -> None:
    """kerneld re-asserts fault side effects every 2 s; it must act on the state as it is under the lock,
    never on a copy read before `fault clear` ran (that put a cleared MTU fault back in a lab run)."""
    import threading

    from clusterforge.lab.sim import state as S

    node.fault("mtu-reverted", rail=0)
    with node.env():
        entered, release = threading.Event(), threading.Event()

        def reader() -> None:
            with S.held() as st:
                assert "mtu-reverted" in st["faults"]
                entered.set()
                release.wait(5)

        t = threading.Thread(target=reader)
        t.start()
        assert entered.wait(5)
        cleared = threading.Thread(target=lambda: node.clear("mtu-reverted"))
        cleared.start()
        cleared.join(0.3)
        assert cleared.is_alive(), "fault clear went ahead while a reader held the state lock"
        release.set()
        t.join(5)
        cleared.join(5)
        assert not cleared.is_alive()
        with S.held() as st:
            assert "mtu-reverted" not in st["faults"]  # held() wrote nothing back over the clear


def test_kerneld_does_not_enforce_a_fault_cleared_after_its_unlocked_read(
    node: SimNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.lab.sim import daemons
    from clusterforge.lab.sim import state as S

    node.fault("mtu-reverted", rail=0)
    stale = node.state  # what kerneld's lock-free read saw just before `fault clear` ran
    node.clear("mtu-reverted")
    real_load, reads = S.load, []

    def load() -> dict:
        reads.append(1)
        return stale if len(reads) == 1 else real_load()

    ran: list[list[str]] = []
    monkeypatch.setattr(S, "load", load)
    monkeypatch.setattr(faults, "_sh", ran.append)
    with node.env():
        assert daemons.kerneld(["--once"]) == 0
    assert not [a for a in ran if "mtu" in a], f"kerneld put the cleared MTU fault back: {ran}"


def test_cable_swap(simroot: Path, lab_plan: Plan) -> None:
    ib = SimNode(simroot / "lab-ib", "h100-sxm-8x400g-ib", node="ib-01", plan=lab_plan.doc)

    def far(hca: str) -> tuple[str, str]:
        d = ibmad.parse_fields(ib.ok("smpquery", "-C", hca, "-P", "1", "-D", "nodedesc", "0,1"), "smpquery")
        i = ibmad.parse_fields(ib.ok("smpquery", "-C", hca, "-P", "1", "-D", "portinfo", "0,1"), "smpquery")
        return d["Node Description"], i["LocalPort"]

    before = {h: far(h) for h in ("mlx5_1", "mlx5_6", "mlx5_0")}
    ib.fault("cable-swap", rail="1,6")
    assert far("mlx5_1") == before["mlx5_6"] and far("mlx5_6") == before["mlx5_1"]
    assert far("mlx5_0") == before["mlx5_0"]
    ib.reboot()
    assert far("mlx5_1") == before["mlx5_6"]  # persists across reboots
    ib.clear("cable-swap")
    assert {h: far(h) for h in before} == before


def test_link_errors(ibnode: SimNode, node: SimNode, monkeypatch: pytest.MonkeyPatch) -> None:
    """The faulted rail's counter grows with the clock (rewritten by kerneld every tick), the other rails'
    stay; clearing stops the growth and puts the counter back; a bad rate is refused."""
    from clusterforge.lab.sim import daemons, linkerr

    clock = [1000.0]
    monkeypatch.setattr(linkerr, "_now", lambda: clock[0])
    sym = "/sys/class/infiniband/mlx5_{}/ports/1/counters/symbol_error"
    ibnode.write(sym.format(3), "7\n")  # errors before the fault: the base it grows from
    ibnode.fault("link-errors", rail=3, rate=4)
    assert ibnode.read(sym.format(3)).strip() == "7"
    clock[0] += 5
    with ibnode.env():
        assert daemons.kerneld(["--once"]) == 0
    assert ibnode.read(sym.format(3)).strip() == "27"  # 7 + 4/s x 5 s
    assert ibnode.read(sym.format(2)).strip() == "0"
    clock[0] += 2.5
    ibnode.reboot()  # the fault persists; the boot's rendering shows the counter as of now
    assert ibnode.read(sym.format(3)).strip() == "37"
    ibnode.clear("link-errors")
    assert ibnode.read(sym.format(3)).strip() == "7"
    clock[0] += 60
    with ibnode.env():
        daemons.kerneld(["--once"])
    assert ibnode.read(sym.format(3)).strip() == "7"  # no growth once cleared

    oos = "/sys/class/infiniband/mlx5_{}/ports/1/hw_counters/out_of_sequence"
    node.fault("link-errors", rail=1)  # RoCE: out_of_sequence, default 5/s
    clock[0] += 2
    with node.env():
        daemons.kerneld(["--once"])
    assert node.read(oos.format(1)).strip() == "10"
    assert node.read("/sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error").strip() == "0"
    node.clear("link-errors")
    assert node.read(oos.format(1)).strip() == "0"
    assert node.run("fault", "set", "link-errors", "rate=0")[0] == 2
    assert node.run("fault", "set", "link-errors", "rate=fast")[0] == 2


def eth_stats(node: SimNode, netdev: str) -> dict[str, int]:
    from clusterforge.hw import nic_counters

    return nic_counters.parse_ethtool_stats(node.ok("ethtool", "-S", netdev)).counters


def test_pause_storm(simroot: Path, lab_plan: Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    """ethtool -S of the faulted rail: rx_prio<P>_pause (P: the plan's lossless priority) and the port's
    pause frames rise with the clock at the fault's rate; the other rails stay quiet; clearing stops the
    growth (the counters keep their values); a new storm grows on from there. Refusals and the tool's
    layout: tests/unit/sim/test_ethtool_sim.py."""
    from clusterforge.lab.sim import pausestorm

    clock = [1000.0]
    monkeypatch.setattr(pausestorm, "_now", lambda: clock[0])
    node = SimNode(simroot / "lab", "h100-sxm-8x400g-roce", node="roce-01", plan=lab_plan.doc)
    netdev = node.state["nics"][1]["netdev"]
    assert [n["lossless_priority"] for n in node.state["nics"]] == [3] * len(node.state["nics"])
    node.ok("mlnx_qos", "-i", netdev, "--pfc", "0,0,0,1,0,0,0,0")
    node.ok("mlnx_qos", "-i", node.state["nics"][0]["netdev"], "--pfc", "0,0,0,1,0,0,0,0")
    node.fault("pause-storm", rail=1)  # default rate, the plan's priority 3
    first = eth_stats(node, netdev)
    clock[0] += 2.0
    second = eth_stats(node, netdev)
    assert second["rx_prio3_pause"] - first["rx_prio3_pause"] == 2 * pausestorm.DEFAULT_RATE
    assert second["rx_pause_ctrl_phy"] - first["rx_pause_ctrl_phy"] == 2 * pausestorm.DEFAULT_RATE
    assert second["tx_prio3_pause"] == first["tx_prio3_pause"] == 0
    assert eth_stats(node, node.state["nics"][0]["netdev"])["rx_prio3_pause"] == 0  # the other rails: quiet
    node.clear("pause-storm")
    clock[0] += 60
    held = eth_stats(node, netdev)
    assert held["rx_prio3_pause"] == second["rx_prio3_pause"]  # stopped, not reset
    clock[0] += 5
    assert eth_stats(node, netdev)["rx_prio3_pause"] == held["rx_prio3_pause"]
    node.fault("pause-storm", rail=1, rate=10)  # again: grows on from what it reached
    clock[0] += 3
    assert eth_stats(node, netdev)["rx_prio3_pause"] == held["rx_prio3_pause"] + 30
