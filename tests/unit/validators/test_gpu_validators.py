"""GPU validators on a real 8x H100 `nvidia-smi -q` (tests/fixtures/real/
nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt, leptonai/gpud testdata per SOURCES.md) and real
`topo -m` / kernel-log captures; faults are made by changing a copy of the capture in the test."""

from __future__ import annotations

import re

import pytest

from clusterforge.certify.checks import CheckError, CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, real, validator

gpu = validator("gpu")
SMI = "nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt"
TOPO = "nvidia-smi-topo__h100x8-8nic-sglang30401__1.txt"


def node_with(smi: str, **more: tuple[int, str]) -> FakeNode:
    return FakeNode({"nvidia-smi -q": (0, smi), **more})


@pytest.mark.parametrize(
    "check",
    [
        "test_count",
        "test_model",
        "test_power_limit",
        "test_persistence_mode",
        "test_ecc_mode",
        "test_remapped_rows",
        "test_ecc_errors",
        "test_pcie",
        "test_mig",
    ],
)
def test_healthy_h100_passes(ib_node: NodeExpect, check: str) -> None:
    getattr(gpu, check)(ib_node, node_with(real(SMI)))


def test_driver_branch_differs_from_pin(ib_node: NodeExpect) -> None:
    with pytest.raises(
        CheckFailed,
        match=r"driver branch: expected 570; found 535.161.08. Fix: run "
        r"`clusterforge provision --tags gpu_driver --limit ib-01`",
    ):
        gpu.test_driver_branch(ib_node, node_with(real(SMI)))


def test_missing_gpu_fails_count(ib_node: NodeExpect) -> None:
    text = real(SMI)
    first, second = [m.start() for m in re.finditer(r"^GPU 0000", text, re.M)][:2]
    seven = text[:first] + text[second:]
    with pytest.raises(CheckFailed, match=r"GPU count .*expected 8; found 7"):
        gpu.test_count(ib_node, node_with(seven))


def test_pending_remap_fails(ib_node: NodeExpect) -> None:
    text = re.sub(r"(Remapped Rows\n(?:.*\n){2}\s+Pending\s+:) No", r"\1 Yes", real(SMI), count=1)
    with pytest.raises(CheckFailed, match="remap pending=True"):
        gpu.test_remapped_rows(ib_node, node_with(text))


def test_active_hw_slowdown_fails(ib_node: NodeExpect) -> None:
    text = re.sub(r"(        HW Slowdown\s+:) Not Active", r"\1 Active", real(SMI), count=1)
    with pytest.raises(CheckFailed, match="HW Slowdown"):
        gpu.test_clock_events(ib_node, node_with(text))


def test_hung_nvidia_smi_is_error_for_every_gpu_check(ib_node: NodeExpect) -> None:
    node = FakeNode({"nvidia-smi -q": (124, "")})
    for check in (gpu.test_count, gpu.test_persistence_mode):
        with pytest.raises(CheckError, match="hung"):
            check(ib_node, node)
    assert node.asked == ["nvidia-smi -q"]  # one timeout, not one per check


def test_truncated_output_is_error(ib_node: NodeExpect) -> None:
    with pytest.raises(CheckError, match="not recognised"):
        gpu.test_count(ib_node, node_with(real(SMI)[:5000]))


def test_topology(ib_node: NodeExpect) -> None:
    gpu.test_topology(ib_node, FakeNode({"nvidia-smi topo -m": (0, real(TOPO))}))
    broken = real(TOPO).replace("GPU0     X      NV18", "GPU0     X      NV12", 1)
    broken = broken.replace("GPU1    NV18     X", "GPU1    NV12     X", 1)
    with pytest.raises(CheckFailed, match="GPU0-GPU1=NV12"):
        gpu.test_topology(ib_node, FakeNode({"nvidia-smi topo -m": (0, broken)}))


def test_xid_fatal_in_kernel_log(ib_node: NodeExpect) -> None:
    log = real("xid__535.161-dmesg-T-xid79-fallen-off-bus-crashdump-akash209__7.txt")
    node = FakeNode({"dmesg": (0, log), "journalctl -k -b -q --no-pager -o short-iso": (0, "")})
    with pytest.raises(CheckFailed, match=r"Xid 79 on 0000:a1:00 \(GPU has fallen off the bus; fatal\)"):
        gpu.test_xid(ib_node, node)


def test_xid_application_errors_pass(ib_node: NodeExpect) -> None:
    log = real("xid__b200-b300-dmesg-T-xid13-mmu-fault-esr-trtllm15610__9.txt")
    node = FakeNode({"dmesg": (0, log), "journalctl -k -b -q --no-pager -o short-iso": (1, "")})
    gpu.test_xid(ib_node, node)
    assert any("Xid 13" in x for x in node.notes["xids"])


def test_xid_no_readable_log_is_error(ib_node: NodeExpect) -> None:
    node = FakeNode({"dmesg": (1, "dmesg: read kernel buffer failed: Operation not permitted")})
    with pytest.raises(CheckError, match="no kernel log could be read"):
        gpu.test_xid(ib_node, node)


def test_nvlink_absent_or_short_is_measured(ib_node: NodeExpect) -> None:
    """`nvidia-smi nvlink --status` printing nothing (real: an H100 VM, driver 580) means no NVLink on any
    GPU: fail naming it, not an unparseable output; a GPU short of the plan's count fails on the count."""
    cmd = "nvidia-smi nvlink --status"
    empty = real("nvidia-smi-nvlink-s__h100-sxm-vm-no-nvlink-drv580-device__1.txt")
    with pytest.raises(
        CheckFailed, match=r"NVLink: expected 18 active links per GPU on 8 GPUs; found no NVLink"
    ):
        gpu.test_nvlink(ib_node, FakeNode({cmd: (0, empty)}))
    one = real("nvidia-smi-nvlink-s__h100-gke-a3-elideng__1.txt")
    with pytest.raises(CheckFailed, match="GPUs in nvlink --status: expected 8; found 1"):
        gpu.test_nvlink(ib_node, FakeNode({cmd: (0, one)}))
    with pytest.raises(CheckError):  # the tool failing is not a measurement
        gpu.test_nvlink(ib_node, FakeNode({cmd: (9, "")}))


def test_power_cap_and_architecture_are_certified(ib_node: NodeExpect) -> None:
    """A GPU capped below the SKU's limit (real: an H100 held at 200 W, driver 580) fails; so does a GPU
    whose architecture is not the SKU's, even under the right product name."""
    capped = real("nvidia-smi-q__h100-gke-a3-580-powercap-active-elideng__3.txt")
    with pytest.raises(CheckFailed, match=r"GPU power limit: expected 700.00 W; found .*=200.00 W"):
        gpu.test_power_limit(ib_node, node_with(capped))
    renamed = real(SMI).replace("Hopper", "Ampere", 1)
    with pytest.raises(
        CheckFailed, match=r"GPU model: expected NVIDIA H100 80GB HBM3 \(hopper\); found .*Ampere"
    ):
        gpu.test_model(ib_node, node_with(renamed))


def test_memory_larger_than_the_sku_is_other_hardware_not_a_failing_gpu(ib_node: NodeExpect) -> None:
    """An H200 (real capture, thamada) in an H100 pool, as when the lent machine was an H200 against the
    H100 plan (2026-11-27): the fix is the SKU's, never an RMA; less memory than the SKU is the GPU's."""
    gpu.test_memory(ib_node, node_with(real(SMI)))
    with pytest.raises(CheckFailed) as exc:
        gpu.test_memory(ib_node, node_with(real("nvidia-smi-q__h200-passthrough-550.90-thamada__5.txt")))
    assert "expected 81559 MiB" in str(exc.value) and "SKU does not match this hardware" in str(exc.value)
    assert "RMA" not in str(exc.value)
    smaller = re.sub(r"(FB Memory Usage\s*\n\s*Total\s*:\s*)81559 MiB", r"\g<1>40960 MiB", real(SMI), count=1)
    assert smaller != real(SMI)
    with pytest.raises(CheckFailed, match=r"found .*=40960 MiB\. Fix: drain the node, reset the GPU"):
        gpu.test_memory(ib_node, node_with(smaller))
