"""nvidia_smi.parse_topo on every ``nvidia-smi-topo__*`` real capture (sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.nvidia_smi import parse_topo

from .conftest import head

Real = Callable[[str], str]
GPUS8 = tuple(f"GPU{i}" for i in range(8))


def test_a100x8_10nic_tabs(real: Real) -> None:
    """nvidia-smi-topo__a100x8-10nic-oyanghd__1.txt - oyanghd/gpu-compress-decompress:
    docs/project_description_EN.md lines 126-168 @6ce00a5e; tabs preserved, NV12, 10 mlx5 NICs."""
    t = parse_topo(real("nvidia-smi-topo__a100x8-10nic-oyanghd__1.txt"))
    assert t.gpus == GPUS8 and t.nics == tuple(f"NIC{i}" for i in range(10))
    assert t.link("GPU0", "GPU1") == "NV12" and t.nvlink_count("GPU3", "GPU7") == 12
    assert (
        t.link("GPU0", "NIC0") == "PXB"
        and t.link("GPU0", "NIC2") == "SYS"
        and t.link("NIC8", "NIC9") == "PIX"
    )
    assert t.nvlink_count("GPU0", "NIC0") is None and t.link("GPU5", "GPU5") == "X"
    assert t.affinity["GPU2"].cpu_affinity == "16-31,144-159" and t.affinity["GPU2"].numa_nodes == (1,)
    assert t.affinity["GPU6"].cpus[:2] == (80, 81) and len(t.affinity["GPU6"].cpus) == 32
    assert t.nic_names["NIC9"] == "mlx5_9" and t.nic_device("NIC3") == "mlx5_3"
    assert "PXB" in t.legend and t.anomalies == ()


def test_a100_vm_fused_nic7_cpu_cell(real: Real) -> None:
    """nvidia-smi-topo__a100x8-vm-8nic-phb-truncated-brevdoc__2.txt - code-index file id 60859828466 (markdown
    capture log of an 8x A100 Shadeform/Brev VM). SOURCES.md: REAL-WORLD QUIRK - every GPU row has the NIC7
    cell
    fused with CPU Affinity as ``PH0-115``; "parsers must not crash on it". The parser recovers the CPU list,
    reports the lost GPU->NIC7 link as None and lists the quirk in ``anomalies``."""
    t = parse_topo(real("nvidia-smi-topo__a100x8-vm-8nic-phb-truncated-brevdoc__2.txt"))
    assert len(t.anomalies) == 8 and "GPU0: NIC7 cell fused" in t.anomalies[0]
    assert (
        t.link("GPU0", "NIC7") is None and t.link("NIC7", "GPU0") == "PHB" and t.link("GPU0", "NIC6") == "PHB"
    )
    aff = t.affinity["GPU3"]
    assert aff.cpu_affinity == "0-115" and len(aff.cpus) == 116
    assert aff.numa_affinity == "0-3" and aff.numa_nodes == (0, 1, 2, 3) and aff.gpu_numa_id is None


def test_a10x4_pcie_only_spaces(real: Real) -> None:
    """nvidia-smi-topo__a10x4-2nic-xuesongtap__1.txt - XueSongTap/XueSongTap.github.io
    _posts/2024/2024-01-04-nvidia-smi-more.md lines 152-173 @911d76ca; spaces not tabs, no NVLink."""
    t = parse_topo(real("nvidia-smi-topo__a10x4-2nic-xuesongtap__1.txt"))
    assert t.gpus == ("GPU0", "GPU1", "GPU2", "GPU3") and t.nics == ("NIC0", "NIC1")
    assert all(t.link(a, b) == "SYS" for a in t.gpus for b in t.gpus if a != b)
    assert t.link("NIC0", "NIC1") == "PIX" and t.nvlink_count("GPU0", "GPU1") is None
    assert t.affinity["GPU1"].cpu_affinity == "0-127" and t.affinity["GPU1"].numa_nodes == (0,)


def test_b200x8_collapsed_numa_columns(real: Real) -> None:
    """nvidia-smi-topo__b200x8-8nic-gke-a4-dranet__1.txt - kubernetes-sigs/dranet
    site/content/docs/user/gke-rdma.md lines 411-448 @f258477c; NUMA/GPU NUMA ID collapsed to ``0 N/A``."""
    t = parse_topo(real("nvidia-smi-topo__b200x8-8nic-gke-a4-dranet__1.txt"))
    assert t.nvlink_count("GPU0", "GPU7") == 18
    assert [t.link("GPU0", f"NIC{i}") for i in range(8)] == [
        "PIX",
        "PIX",
        "NODE",
        "NODE",
        "SYS",
        "SYS",
        "SYS",
        "SYS",
    ]
    assert t.affinity["GPU4"].cpu_affinity == "56-111,168-223" and t.affinity["GPU4"].numa_nodes == (1,)
    assert t.affinity["GPU0"].gpu_numa_id is None


def test_h100x8_12nic_single_numa(real: Real) -> None:
    """nvidia-smi-topo__h100x8-12nic-1numa-aihub0007-slurmv4__1.txt - devopsrustem/slurmv4 (3/12.sh,
    lines 973-1018) @3e72c525; tabs, NIC rows with trailing tab-only cells."""
    t = parse_topo(real("nvidia-smi-topo__h100x8-12nic-1numa-aihub0007-slurmv4__1.txt"))
    assert len(t.nics) == 12 and t.nic_names["NIC10"] == "mlx5_10"
    assert (
        t.link("GPU3", "NIC5") == "PIX"
        and t.link("GPU3", "NIC3") == "NODE"
        and t.link("NIC9", "NIC10") == "PIX"
    )
    assert {a.cpu_affinity for a in t.affinity.values()} == {"0-191"}
    assert {a.numa_nodes for a in t.affinity.values()} == {(0,)}


def test_h100x8_della_empty_cpu_affinity(real: Real) -> None:
    """nvidia-smi-topo__h100x8-6nic-della-pli__1.txt - code-index page id 23161972012, "Intra-Node Topology";
    CPU Affinity EMPTY for GPU0-3 and "1" for GPU4-7 (odd real output)."""
    t = parse_topo(real("nvidia-smi-topo__h100x8-6nic-della-pli__1.txt"))
    assert t.affinity["GPU0"].cpu_affinity is None and t.affinity["GPU0"].cpus == ()
    assert t.affinity["GPU0"].numa_nodes == (0,)
    assert t.affinity["GPU4"].cpu_affinity == "1" and t.affinity["GPU4"].numa_nodes == (1,)
    assert (
        t.link("GPU0", "NIC0") == "PIX"
        and t.link("GPU0", "NIC1") == "PIX"
        and t.link("GPU6", "NIC5") == "PIX"
    )


def test_h100x8_sglang_gpu_numa_id_column(real: Real) -> None:
    """nvidia-smi-topo__h100x8-8nic-sglang30401__1.txt - https://github.com/sgl-project/sglang/issues/30401
    (check_env "NVIDIA Topology:" section); spaces, has the newer ``GPU NUMA ID`` column."""
    t = parse_topo(real("nvidia-smi-topo__h100x8-8nic-sglang30401__1.txt"))
    assert all(t.link(f"GPU{i}", f"NIC{i}") == "PIX" for i in range(8))
    assert t.affinity["GPU4"].cpu_affinity == "48-95,144-191" and t.affinity["GPU7"].numa_nodes == (1,)


def test_h100x8_no_nics(real: Real) -> None:
    """nvidia-smi-topo__h100x8-gke-a3-nonic-elideng__1.txt - elideng repo assets/lab-04/topo-8gpu.txt
    @d9f1e65e;
    no NIC columns and no NIC Legend; ANSI underline escapes were stripped by the index (also tolerated)."""
    text = real("nvidia-smi-topo__h100x8-gke-a3-nonic-elideng__1.txt")
    for variant in (text, "\x1b[4m" + text.replace("\tGPU NUMA ID", "\tGPU NUMA ID\x1b[0m", 1)):
        t = parse_topo(variant)
        assert t.nics == () and t.nic_names == {}
        assert t.nvlink_count("GPU1", "GPU2") == 18
        assert t.affinity["GPU4"].cpu_affinity == "52-103,156-207" and t.affinity["GPU0"].numa_nodes == (0,)


def test_l40s_topo_mp_single_gpu(real: Real) -> None:
    """nvidia-smi-topo__l40s-r760xa-1gpu-10nic-sriov-topo-mp-schmaustech__1.txt - SOURCES.md "same file"
    (lines 1138-1171) @2d5773fd; ``nvidia-smi topo -mp`` (no NV# legend), 1 GPU, 10 NICs."""
    t = parse_topo(real("nvidia-smi-topo__l40s-r760xa-1gpu-10nic-sriov-topo-mp-schmaustech__1.txt"))
    assert t.gpus == ("GPU0",) and len(t.nics) == 10 and "NV#" not in t.legend
    assert (
        t.link("GPU0", "NIC0") == "NODE"
        and t.link("NIC1", "NIC2") == "PIX"
        and t.link("NIC0", "NIC1") == "NODE"
    )
    assert t.affinity["GPU0"].cpus == (0, 2, 4, 6, 8, 10)


def test_truncated_raises(real: Real) -> None:
    """Cuts of nvidia-smi-topo__a100x8-10nic-oyanghd__1.txt (oyanghd/gpu-compress-decompress)."""
    text = real("nvidia-smi-topo__a100x8-10nic-oyanghd__1.txt")
    with pytest.raises(ParseError, match="rows missing"):
        parse_topo(head(text, 9))  # header + GPU rows, NIC rows lost
    with pytest.raises(ParseError, match="Legend"):
        parse_topo(head(text, 20))  # whole matrix, no legend
    with pytest.raises(ParseError, match="NIC Legend"):
        parse_topo(head(text, 36))  # NIC legend cut after NIC3


@pytest.mark.parametrize(
    "text",
    [
        "hello\n",
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tFOO\t0-3\t0\nGPU1\tFOO\t X \t0-3\t0\n\nLegen"
        "d:\n\n"
        "  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n",
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-3\t0\nGPU1\tNV8\t X \t0-3\t0\n\nLegen"
        "d:\n\n"
        "  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n",
    ],
)
def test_garbage_or_inconsistent_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse_topo(text)


def test_cut_short_partial(real: Real) -> None:
    """nvidia-smi-topo__h100x8-8nic-sglang30401__1.txt cut after 6 lines (header + GPU0-4), the last of
    them mid-row: strict parsing says truncated; ``partial=True`` gives the complete rows and names the
    rest."""
    text = real("nvidia-smi-topo__h100x8-8nic-sglang30401__1.txt")
    cut = head(text, 6)
    cut = cut[: cut.rstrip("\n").rfind("NV18")]  # GPU4's row stops after a few cells, as a killed command
    with pytest.raises(ParseError, match=r"truncated|link cells"):
        parse_topo(cut)
    t = parse_topo(cut, partial=True)
    assert not t.complete and list(t.links) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert t.missing[0] == "GPU4" and "NIC7" in t.missing and "GPU4: row cut short" in t.anomalies
    assert t.link("GPU0", "NIC0") == "PIX" and t.nvlink_count("GPU1", "GPU3") == 18 and t.legend == {}
    assert t.affinity["GPU0"].cpus
    full = parse_topo(text, partial=True)
    assert full.complete and full.missing == ()
    with pytest.raises(ParseError, match="invalid link value"):
        parse_topo(cut.replace("NV18", "ZZ9", 1), partial=True)  # a bad cell on a complete row still fails


def test_h100_vm_single_gpu_ansi_header(real: Real) -> None:
    """nvidia-smi-topo__h100-sxm-vm-1gpu-ansi-drv580-device__1.txt - scripts/capture-node.sh on a lent H100
    VM, driver 580: written to a file (no TTY), the header still has ESC[4m ... ESC[0m; one GPU, no NIC."""
    text = real("nvidia-smi-topo__h100-sxm-vm-1gpu-ansi-drv580-device__1.txt")
    assert "\x1b[4m" in text
    topo = parse_topo(text)
    assert topo.gpus == ("GPU0",) and topo.nics == ()
    assert topo.links == {"GPU0": {"GPU0": "X"}}
    aff = topo.affinity["GPU0"]
    assert aff.cpus == tuple(range(16)) and aff.numa_nodes == (0,) and aff.gpu_numa_id is None
