"""nvidia_smi.parse_q on every ``nvidia-smi-q__*`` real capture.

Fixture sources are quoted from tests/fixtures/real/SOURCES.md (file | source | commit).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.nvidia_smi import parse_q

from .conftest import head

Real = Callable[[str], str]


def test_a100x8_full_dump(real: Real) -> None:
    """nvidia-smi-q__a100x8-sxm4-40gb-xuesongtap__1.txt - XueSongTap/XueSongTap.github.io:
    _posts/2024/2024-01-04-nvidia-smi-more.md lines 779-2345 @911d76ca (``nvidia-smi -a``, 8x
    A100-SXM4-40GB)."""
    q = parse_q(real("nvidia-smi-q__a100x8-sxm4-40gb-xuesongtap__1.txt"))
    assert (q.driver_version, q.cuda_version, q.attached_gpus) == ("535.129.03", "12.2", 8)
    assert q.timestamp == "Thu Jan  4 14:41:13 2024"
    assert [g.bus_id for g in q.gpus] == [
        "00000000:2F:00.0", "00000000:35:00.0", "00000000:62:00.0", "00000000:67:00.0",
        "00000000:9F:00.0", "00000000:A5:00.0", "00000000:C8:00.0", "00000000:CD:00.0",
    ]  # fmt: skip
    g0 = q.gpu("00000000:2f:00.0")
    assert g0.product_name == "NVIDIA A100-SXM4-40GB" and g0.architecture == "Ampere"
    assert (g0.serial, g0.vbios_version) == ("1323121035405", "92.00.36.00.04")
    assert g0.uuid == "GPU-faae5314-b87e-87c0-400b-b7cfb9e7b310"
    assert g0.persistence_mode == "Disabled" and g0.mig_mode_current == "Disabled"
    assert (g0.ecc_mode_current, g0.ecc_mode_pending) == ("Enabled", "Enabled")
    assert g0.ecc_volatile is not None and g0.ecc_volatile.dram_uncorrectable == 0
    assert g0.ecc_volatile.sram_uncorrectable == 0 and g0.ecc_volatile.sram_uncorrectable_parity is None
    assert g0.remapped_rows is not None and g0.remapped_rows.histogram["Max"] == 640
    assert g0.retired_pages is not None and g0.retired_pages.single_bit_ecc is None  # N/A on A100
    assert (g0.pcie_gen_current, g0.pcie_gen_max, g0.pcie_gen_host_max) == (4, 4, 3)
    assert (g0.link_width_current, g0.link_width_max) == (16, 16)
    assert g0.memory_total_mib == 40960 and g0.power_draw_w == 52.12 and g0.power_limit_w == 400.0
    assert g0.active_clock_event_reasons == ("Idle",)
    assert g0.fabric_state is None and g0.processes == ()
    assert q.gpus[4].serial == "1322921084044"


def test_a100_single_gpu_i0(real: Real) -> None:
    """nvidia-smi-q__a100-sxm4-40gb-i0-xuesongtap__2.txt - same XueSongTap post, lines 2368-2569 @911d76ca
    (``nvidia-smi -i 0 -q``): one GPU section although the header says Attached GPUs : 8."""
    q = parse_q(real("nvidia-smi-q__a100-sxm4-40gb-i0-xuesongtap__2.txt"))
    assert q.attached_gpus == 8 and len(q.gpus) == 1
    g = q.gpus[0]
    assert g.bus_id == "00000000:2F:00.0" and g.power_draw_w == 52.45 and g.temperature_gpu_c == 22
    assert g.fields["Inforom Version/Image Version"] == "G506.0200.00.04"
    assert g.fields["PCI/Bus Id"] == "00000000:2F:00.0"


def test_h100x8_baremetal_hw_slowdown_and_replays(real: Real) -> None:
    """nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt - leptonai/gpud:
    pkg/nvidia-query/testdata/nvidia-smi-query.535.161.08.out.0.valid @c7f00344 (``nvidia-smi --query``)."""
    q = parse_q(real("nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt"))
    assert q.driver_version == "535.161.08" and len(q.gpus) == 8
    g0 = q.gpus[0]
    assert (g0.bus_id, g0.serial, g0.vbios_version) == ("00000000:19:00.0", "1650124031592", "96.00.74.00.0D")
    assert g0.uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert g0.persistence_mode == "Enabled" and g0.virtualization_mode == "None"
    assert g0.pcie_gen_host_max == 5 and g0.memory_total_mib == 81559
    assert [g.pcie_replays for g in q.gpus] == [67, 63, 52, 43, 49, 53, 82, 67]
    assert all(g.active_clock_event_reasons == ("HW Slowdown", "HW Power Brake Slowdown") for g in q.gpus)
    assert g0.clock_event_reasons["HW Thermal Slowdown"] is False
    assert (g0.fabric_state, g0.fabric_status) == ("Completed", "Success")
    ecc = g0.ecc_aggregate
    assert ecc is not None and ecc.sram_uncorrectable_secded == 0 and ecc.sram_uncorrectable == 0
    assert g0.sram_threshold_exceeded is False
    assert g0.remapped_rows is not None and g0.remapped_rows.histogram["Max"] == 2560
    assert (g0.power_draw_w, g0.power_limit_w, g0.default_power_limit_w) == (67.74, 700.0, 700.0)


def test_h100x8_passthrough_vm_process_and_power_cap(real: Real) -> None:
    """nvidia-smi-q__h100x8-passthrough-vm-535.183-gpud__2.txt - leptonai/gpud:
    pkg/nvidia-query/testdata/nvidia-smi-query.535.183.01.out.0.valid @c7f00344."""
    q = parse_q(real("nvidia-smi-q__h100x8-passthrough-vm-535.183-gpud__2.txt"))
    assert q.driver_version == "535.183.01" and q.timestamp == "Fri Jun 21 02:03:08 2024"
    assert all(g.virtualization_mode == "Pass-Through" and g.pcie_gen_host_max is None for g in q.gpus)
    busy = q.gpus[2]
    assert busy.bus_id == "00000000:75:00.0"
    assert busy.processes is not None and busy.processes[0].pid == 1002127
    assert busy.processes[0].name == "/usr/bin/python" and busy.processes[0].used_memory_mib == 9212
    assert busy.active_clock_event_reasons == (
        "SW Power Cap",
        "HW Power Brake Slowdown",
        "SW Thermal Slowdown",
    )
    assert [g.pcie_replays for g in q.gpus] == [120, 111, 58, 60, 63, 93, 69, 78]


def test_gh200_uncorrectable_remap(real: Real) -> None:
    """nvidia-smi-q__gh200-480gb-passthrough-remap-uncorr1-thamada__6.txt - thamada/gls:
    gls/GH200_smi.py (``out_a``) @b2f1cede. PROBLEM SAMPLE: Remapped Rows Uncorrectable Error 1."""
    q = parse_q(real("nvidia-smi-q__gh200-480gb-passthrough-remap-uncorr1-thamada__6.txt"))
    assert (q.driver_version, q.cuda_version, q.attached_gpus) == ("550.127.05", "12.4", 1)
    g = q.gpus[0]
    assert g.product_name == "NVIDIA GH200 480GB" and g.serial == "1654523007052"
    rr = g.remapped_rows
    assert rr is not None and (rr.correctable, rr.uncorrectable, rr.pending, rr.failure_occurred) == (
        0,
        1,
        False,
        False,
    )
    assert rr.histogram == {"Max": 3071, "High": 1, "Partial": 0, "Low": 0, "None": 0}
    assert (g.pcie_gen_current, g.link_width_current) == (4, 1)  # passthrough VM reports x1
    assert g.fabric_state is None and g.fields["Fabric/CliqueId"] is None  # Fabric State N/A
    assert g.fields["GPU C2C Mode"] == "Enabled" and g.memory_total_mib == 97871
    assert g.fields["Temperature/GPU Shutdown T.Limit Temp"] == "-8 C"


def test_h200_passthrough(real: Real) -> None:
    """nvidia-smi-q__h200-passthrough-550.90-thamada__5.txt - thamada/gls: gls/H200_smi.py (``out_a``)
    @c0bed08d."""
    q = parse_q(real("nvidia-smi-q__h200-passthrough-550.90-thamada__5.txt"))
    g = q.gpus[0]
    assert (q.driver_version, g.product_name, g.vbios_version) == (
        "550.90.12",
        "NVIDIA H200",
        "96.00.A5.00.03",
    )
    assert (
        g.memory_total_mib == 143771
        and g.remapped_rows is not None
        and g.remapped_rows.histogram["Max"] == 3072
    )
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success") and g.temperature_gpu_c == 28


def test_580_driver_layout_health(real: Real) -> None:
    """nvidia-smi-q__h100-gke-a3-580-health-elideng__2.txt - SOURCES.md: "same repo" as the other *elideng*
    captures, assets/lab-14/health_idle_full.txt @31be610d; ``nvidia-smi -i 0 -q -d ECC,PERFORMANCE,...``.
    A leading ``# cmd:`` line precedes the banner (ignored); 580 layout with 55-char key column."""
    q = parse_q(real("nvidia-smi-q__h100-gke-a3-580-health-elideng__2.txt"))
    assert (q.driver_version, q.cuda_version, q.attached_gpus, len(q.gpus)) == ("580.126.20", "13.0", 8, 1)
    g = q.gpus[0]
    assert g.bus_id == "00000000:04:00.0" and g.product_name is None  # -d sections only
    assert (g.power_draw_w, g.power_draw_instant_w, g.power_limit_w) == (72.12, 72.23, 700.0)
    assert (g.sram_threshold_exceeded, g.channel_repair_pending, g.tpc_repair_pending) == (
        False,
        False,
        False,
    )
    assert g.fields["Clocks Event Reasons Counters/SW Power Capping"] == "216559430 us"
    assert g.fields["SM Clock Samples/Duration"] is None  # "Not Found"
    assert g.remapped_rows is not None and g.remapped_rows.histogram["Max"] == 2560
    assert g.temperature_gpu_c == 36 and g.active_clock_event_reasons == ("Idle",)


def test_580_power_cap_active(real: Real) -> None:
    """nvidia-smi-q__h100-gke-a3-580-powercap-active-elideng__3.txt - elideng repo
    assets/lab-14/throttle_powercap_full.txt @86f3cf6f. PROBLEM case: SW Power Cap Active, limit 200 W."""
    g = parse_q(real("nvidia-smi-q__h100-gke-a3-580-powercap-active-elideng__3.txt")).gpus[0]
    assert g.active_clock_event_reasons == ("SW Power Cap",)
    assert (g.power_limit_w, g.default_power_limit_w, g.max_power_limit_w) == (200.0, 700.0, 700.0)
    assert g.power_draw_w == 209.55 and g.ecc_volatile is None and g.remapped_rows is None


def test_bad_edited_page_retirement_parses_and_exposes_injected_values(real: Real) -> None:
    """nvidia-smi-q__8gpu-d-page-retirement-azurenhc__bad-edited.txt - Azure/azurehpc-health-checks:
    test/data/bad_nvsmi8_output.txt @0e0a1ac2. SOURCES.md: EDITED by the test author (real layout, fabricated
    retired-page counts) - "use only as a negative-path fixture". The layout is genuine ``-d PAGE_RETIREMENT``
    output, so the parser accepts it; the fabricated values are what a validator must flag."""
    q = parse_q(real("nvidia-smi-q__8gpu-d-page-retirement-azurenhc__bad-edited.txt"))
    assert q.driver_version == "535.86.10" and len(q.gpus) == 8
    pages = [g.retired_pages for g in q.gpus]
    assert all(p is not None for p in pages)
    assert [(p.single_bit_ecc, p.double_bit_ecc, p.pending) for p in pages if p] == [
        (60, 5, False), (2, 61, True), (0, 0, False), (6, 0, True),
        (0, 0, False), (20, 45, True), (0, 0, False), (8, 56, True),
    ]  # fmt: skip
    assert q.gpus[1].bus_id == "00000002:00:00.0"


def test_excerpt_remap_pending(real: Real) -> None:
    """nvidia-smi-q__a100-80gb-remap-pending-stas00__excerpt1.txt - stas00/ml-engineering:
    compute/accelerator/nvidia/debug.md lines 41-75 @1c4d240d. EXCERPT: no banner, two ``[...]`` elisions.
    Strict parsing rejects it; ``partial=True`` reads what is there (DRAM Correctable 177, remap pending)."""
    text = real("nvidia-smi-q__a100-80gb-remap-pending-stas00__excerpt1.txt")
    with pytest.raises(ParseError, match="banner"):
        parse_q(text)
    q = parse_q(text, partial=True)
    assert q.driver_version == "510.73.08" and q.cuda_version == "11.6"
    g = q.gpus[0]
    assert g.bus_id == "00000000:10:1C.0" and g.product_name == "NVIDIA A100-SXM4-80GB"
    assert g.ecc_volatile is not None and g.ecc_volatile.dram_correctable == 177
    assert g.ecc_aggregate is not None and g.ecc_aggregate.dram_correctable == 177
    rr = g.remapped_rows
    assert rr is not None and (rr.correctable, rr.pending) == (1, True)
    assert rr.histogram["Max"] == 639 and rr.histogram["High"] == 1


def test_truncated_full_dump_raises(real: Real) -> None:
    """First 150 lines of nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt (gpud testdata): GPU 0 cut
    before its ``Processes`` line."""
    text = real("nvidia-smi-q__h100x8-baremetal-535.161-gpud__1.txt")
    with pytest.raises(ParseError, match="truncated"):
        parse_q(head(text, 150))
    with pytest.raises(ParseError, match="no GPU sections"):
        parse_q(head(text, 8))  # banner and header only


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world\n",
        "==============NVSMI LOG==============\nfoo bar\n",
        "GPU 0: NVIDIA H100 (UUID: x)\n",
    ],
)
def test_garbage_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse_q(text)


def test_pre_ampere_ecc_layout() -> None:
    """Synthetic sample in the pre-Ampere layout (Single Bit / Double Bit sub-blocks, Clocks Throttle Reasons,
    Power Readings) that older drivers print; no real capture of it is in the shared set."""
    text = """
==============NVSMI LOG==============

Timestamp                           : Mon Jan  1 00:00:00 2018
Driver Version                      : 418.67
CUDA Version                        : 10.1

Attached GPUs                       : 1
GPU 00000000:00:1E.0
    Product Name                    : Tesla V100-SXM2-16GB
    Clocks Throttle Reasons
        Idle                        : Not Active
        SW Power Cap                : Active
    ECC Errors
        Volatile
            Single Bit
                Device Memory       : 3
                Register File       : 0
                Total               : 3
            Double Bit
                Device Memory       : 0
                Register File       : 0
                Total               : 0
    Retired Pages
        Single Bit ECC              : 1
        Double Bit ECC              : 0
        Pending                     : No
    Remapped Rows                   : N/A
    Power Readings
        Power Draw                  : 41.19 W
        Power Limit                 : 300.00 W
    Processes                       : None
"""
    g = parse_q(text).gpus[0]
    assert g.ecc_volatile is not None
    assert (g.ecc_volatile.single_bit_total, g.ecc_volatile.double_bit_total) == (3, 0)
    assert g.ecc_volatile.counters["Single Bit/Device Memory"] == 3
    assert g.retired_pages is not None and (g.retired_pages.single_bit_ecc, g.retired_pages.pending) == (
        1,
        False,
    )
    assert g.remapped_rows is None
    assert g.active_clock_event_reasons == ("SW Power Cap",)
    assert (g.power_draw_w, g.power_limit_w) == (41.19, 300.0)


def test_bad_counter_value_raises() -> None:
    text = """==============NVSMI LOG==============
Timestamp                           : x
Driver Version                      : 535.1
CUDA Version                        : 12.2
Attached GPUs                       : 1
GPU 00000000:00:1E.0
    Remapped Rows
        Correctable Error           : lots
"""
    with pytest.raises(ParseError, match="Remapped Rows/Correctable Error"):
        parse_q(text)


def test_h100_sxm_vm_driver_580(real: Real) -> None:
    """nvidia-smi-q__h100-sxm-vm-drv580-device__1.txt - captured by scripts/capture-node.sh on a lent
    H100 machine (Firecracker VM, driver 580.159.04): the 580 layout (Addressing Mode, GPU Recovery Action,
    Fabric Health, relative T.Limit temperatures) parses; a VM shows Pass-Through and no NVLink fabric."""
    q = parse_q(real("nvidia-smi-q__h100-sxm-vm-drv580-device__1.txt"))
    assert (q.driver_version, q.cuda_version, q.attached_gpus) == ("580.159.04", "13.0", 1)
    g = q.gpus[0]
    assert (g.product_name, g.architecture, g.bus_id) == (
        "NVIDIA H100 80GB HBM3",
        "Hopper",
        "00000000:00:06.0",
    )
    assert (g.serial, g.vbios_version, g.memory_total_mib) == ("1752624007693", "96.00.DA.00.0C", 81559)
    assert (g.persistence_mode, g.ecc_mode_current, g.mig_mode_current) == ("Enabled", "Enabled", "Disabled")
    assert g.virtualization_mode == "Pass-Through" and (g.pcie_gen_max, g.link_width_current) == (5, 16)
    assert (g.power_limit_w, g.max_power_limit_w, g.temperature_gpu_c) == (700.0, 700.0, 35)
    assert g.remapped_rows is not None and g.remapped_rows.pending is False
    assert g.remapped_rows.histogram["Max"] == 2560
    assert g.active_clock_event_reasons == ("Idle",) and g.fabric_state is None
    assert g.fields["GPU Recovery Action"] == "None"
    assert g.fields["Temperature/GPU Shutdown T.Limit Temp"] == "-8 C"
