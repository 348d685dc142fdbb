"""Simulated GPU tools: every output parses with the real parsers into the SKU's values."""

from __future__ import annotations

from clusterforge.hw import dcgmi, nccl_tests, nvbandwidth
from clusterforge.hw import nvidia_smi as ns

from .conftest import SimNode

FIELDS = [
    "name",
    "persistence_mode",
    "ecc.mode.current",
    "memory.total",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "clocks_event_reasons.active",
    "fabric.state",
    "fabric.status",
    "remapped_rows.pending",
    "remapped_rows.correctable",
    "remapped_rows.uncorrectable",
    "remapped_rows.failure",
    "ecc.errors.uncorrected.volatile.dram",
    "ecc.errors.corrected.aggregate.sram",
    "serial",
    "uuid",
    "driver_version",
    "vbios_version",
    "mig.mode.current",
    "pci.bus_id",
    "index",
]


def test_q_matches_sku(node: SimNode) -> None:
    q = ns.parse_q(node.ok("nvidia-smi", "-q"))
    sku = node.plan["skus"][node.sku]["gpu"]
    assert q.driver_version == "570.133.20" and q.cuda_version == "12.8"
    assert q.attached_gpus == 8 and len(q.gpus) == 8
    for g in q.gpus:
        assert g.product_name == sku["model"] and g.memory_total_mib == sku["memory_mib"]
        assert (
            g.pcie_gen_current == sku["pcie"]["generation"] and g.link_width_current == sku["pcie"]["width"]
        )
        assert g.persistence_mode == "Enabled" and g.ecc_mode_current == "Enabled"
        assert (g.fabric_state, g.fabric_status) == ("Completed", "Success")
        assert g.remapped_rows is not None and g.remapped_rows.pending is False
        assert g.power_limit_w == sku["power_limit_w"]
    assert len({g.uuid for g in q.gpus}) == 8
    one = ns.parse_q(node.ok("nvidia-smi", "-q", "-i", "3", "-d", "ECC,ROW_REMAPPER"), partial=True)
    assert len(one.gpus) == 1 and one.gpus[0].ecc_volatile is not None


def test_query_csv_all_formats(node: SimNode) -> None:
    for fmt in ("csv", "csv,noheader", "csv,noheader,nounits", "csv,nounits"):
        rows = ns.parse_query_csv(
            node.ok("nvidia-smi", f"--query-gpu={','.join(FIELDS)}", f"--format={fmt}"), FIELDS
        )
        assert len(rows) == 8
        r = rows[0]
        assert r["name"] == "NVIDIA H100 80GB HBM3" and r["memory.total"] == 81559
        assert r["persistence_mode"] == "Enabled" and r["ecc.mode.current"] == "Enabled"
        assert r["pcie.link.gen.current"] == 5 and r["pcie.link.width.current"] == 16
        assert r["fabric.state"] == "Completed" and r["mig.mode.current"] == "Disabled"
        assert r["ecc.errors.uncorrected.volatile.dram"] == 0 and r["driver_version"] == "570.133.20"
    rc, _, err = node.run("nvidia-smi", "--query-gpu=bogus.field", "--format=csv")
    assert rc == 2 and "not a valid field" in err
    rr = node.ok(
        "nvidia-smi", "--query-remapped-rows=gpu_bus_id,remapped_rows.pending", "--format=csv,noheader"
    )
    assert rr.splitlines()[0].endswith(", 0")


def test_topo_and_nvlink(node: SimNode, a100: SimNode) -> None:
    for n, link, rate in ((node, "NV18", 26.562), (a100, "NV12", 25.0)):
        topo = ns.parse_topo(n.ok("nvidia-smi", "topo", "-m"))
        assert len(topo.gpus) == 8 and len(topo.nics) == 8
        assert topo.link("GPU0", "GPU7") == link and topo.link("GPU2", "NIC2") == "PIX"
        assert topo.nvlink_count("GPU0", "GPU1") == int(link[2:])
        status = ns.parse_nvlink_status(n.ok("nvidia-smi", "nvlink", "-s"))
        assert len(status) == 8 and status[0].active_links == int(link[2:])
        assert status[0].links[0].speed_gbps == rate
        errors = ns.parse_nvlink_errors(n.ok("nvidia-smi", "nvlink", "-e"))
        assert errors[0].total("CRC Errors") == 0
    assert ns.parse_q(a100.ok("nvidia-smi", "-q")).gpus[0].product_name == "NVIDIA A100-SXM4-80GB"


def test_settings_pending_until_reset(node: SimNode) -> None:
    out = node.ok("nvidia-smi", "-i", "0", "-e", "0")
    assert "Disabled ECC support for GPU 00000000:19:00.0." in out and "Reboot required." in out
    g0 = ns.parse_q(node.ok("nvidia-smi", "-q", "-i", "0")).gpus[0]
    assert (g0.ecc_mode_current, g0.ecc_mode_pending) == ("Enabled", "Disabled")
    node.ok("nvidia-smi", "-mig", "1")
    assert ns.parse_q(node.ok("nvidia-smi", "-q")).gpus[5].mig_mode_pending == "Enabled"
    assert ns.parse_q(node.ok("nvidia-smi", "-q")).gpus[5].mig_mode_current == "Disabled"
    node.ok("nvidia-smi", "-r", "-i", "5")
    assert ns.parse_q(node.ok("nvidia-smi", "-q")).gpus[5].mig_mode_current == "Enabled"
    node.reboot()
    q = ns.parse_q(node.ok("nvidia-smi", "-q"))
    assert q.gpus[0].ecc_mode_current == "Disabled" and q.gpus[1].mig_mode_current == "Enabled"
    assert q.gpus[0].persistence_mode == "Disabled"  # lost at reboot until persistenced (or -pm 1)
    assert "Enabled Legacy persistence mode" in node.ok("nvidia-smi", "-pm", "1")
    assert ns.parse_q(node.ok("nvidia-smi", "-q")).gpus[7].persistence_mode == "Enabled"


def test_driver_absent_and_mismatch(node: SimNode) -> None:
    node.install("nvidia-driver", None)
    rc, out, _ = node.run("nvidia-smi")
    assert rc == 9 and "couldn't communicate with the NVIDIA driver" in out
    node.install("nvidia-driver", {"version": "570.148.08", "branch": "570"})  # upgraded, not rebooted
    rc, out, _ = node.run("nvidia-smi", "-q")
    assert rc == 18 and "Driver/library version mismatch" in out
    node.reboot()
    assert ns.parse_q(node.ok("nvidia-smi", "-q")).driver_version == "570.148.08"


def test_dcgmi_diag_table_and_json(node: SimNode) -> None:
    for level in ("1", "2", "3"):
        rc, out, _ = node.run("dcgmi", "diag", "-r", level)
        d = dcgmi.parse_diag(out)
        assert rc == 0 and d.verdict == "Pass" and d.dcgm_version == "4.2.3", out
        assert d.driver_version == "570.133.20"
    j = dcgmi.parse_diag(node.ok("dcgmi", "diag", "-r", "2", "-j"))
    assert j.format == "json" and {t.name for t in j.tests} >= {"software", "memory", "pcie"}
    node.ok("nvidia-smi", "-pm", "0")
    rc, out, _ = node.run("dcgmi", "diag", "-r", "1")
    d = dcgmi.parse_diag(out)
    assert rc != 0 and d.verdict == "Fail" and any("Persistence" in w for t in d.tests for w in t.warnings)


def test_nvbandwidth_and_nccl_above_floors(node: SimNode) -> None:
    thr = node.plan["skus"][node.sku]["thresholds"]
    nb = nvbandwidth.parse(
        node.ok(
            "nvbandwidth",
            "-t",
            "host_to_device_memcpy_ce",
            "-t",
            "device_to_host_memcpy_ce",
            "-t",
            "device_to_device_memcpy_read_ce",
        )
    )
    assert len(nb.devices) == 8
    h2d = nb.testcases["host_to_device_memcpy_ce"].matrix[0]
    assert len(h2d) == 8 and min(v for v in h2d.values() if v) > thr["h2d_gbs"]["value"]
    d2d = nb.testcases["device_to_device_memcpy_read_ce"].matrix
    assert min(v for row in d2d.values() for v in row.values() if v is not None) > thr["d2d_gbs"]["value"]
    first = None
    for _ in range(3):
        r = nccl_tests.parse(node.ok("all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"))
        assert r.max_busbw > thr["allreduce_busbw_gbs"]["value"] and len(r.rows) == 31
        assert first != r.max_busbw  # seeded noise: repeated runs differ
        first = r.max_busbw


def test_no_fabric_manager_means_no_cuda(node: SimNode) -> None:
    node.reboot()  # fabric state back to In Progress until nv-fabricmanager runs
    rc, out, _ = node.run("all_reduce_perf", "-g", "8")
    assert rc != 0 and "system not yet initialized" in out
