"""nvidia_smi.parse_nvlink_status / parse_nvlink_errors on every ``nvidia-smi-nvlink-s__*`` and
``nvidia-smi-nvlink-e__*`` real capture (sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.nvidia_smi import parse_nvlink_errors, parse_nvlink_status

from .conftest import head

Real = Callable[[str], str]


def test_status_a100_gpu0_tab_indent(real: Real) -> None:
    """nvidia-smi-nvlink-s__a100-40gb-gpu0-brevdoc__5.txt - code-index capture log id 60859828466
    (``nvidia-smi nvlink -s -i 0``), tab+space indentation, 12 x 25 GB/s."""
    [gpu] = parse_nvlink_status(real("nvidia-smi-nvlink-s__a100-40gb-gpu0-brevdoc__5.txt"))
    assert (gpu.index, gpu.name) == (0, "NVIDIA A100-SXM4-40GB")
    assert gpu.uuid == "GPU-fde0a018-ad1a-bbec-ccf6-50a9f64bd178"
    assert [link.link for link in gpu.links] == list(range(12)) and gpu.active_links == 12
    assert {link.speed_gbps for link in gpu.links} == {25.0} and gpu.total_gbps == 300.0


def test_status_all_inactive(real: Real) -> None:
    """nvidia-smi-nvlink-s__a100-80gb-inactive-azurenhc__4.txt - Azure/azurehpc-health-checks:
    test/data/bad_nvlink_status.txt @0e0a1ac2. PROBLEM case: all links inactive."""
    [gpu] = parse_nvlink_status(real("nvidia-smi-nvlink-s__a100-80gb-inactive-azurenhc__4.txt"))
    assert gpu.index == 6 and gpu.all_inactive and gpu.links == () and gpu.active_links == 0
    assert gpu.uuid == "GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44"


def test_status_a100x8(real: Real) -> None:
    """nvidia-smi-nvlink-s__a100x8-sxm4-80gb-gpud__2.txt - leptonai/gpud:
    pkg/nvidia-query/testdata/nvidia-smi.nvlink.status.a100 @a6146fb1; 9-space indentation, no final
    newline."""
    gpus = parse_nvlink_status(real("nvidia-smi-nvlink-s__a100x8-sxm4-80gb-gpud__2.txt"))
    assert [g.index for g in gpus] == list(range(8)) and all(len(g.links) == 12 for g in gpus)
    assert gpus[7].uuid == "GPU-754035b4-4708-efcd-b261-623aea38bcad" and gpus[7].links[11].speed_gbps == 25.0


def test_status_h100_gke(real: Real) -> None:
    """nvidia-smi-nvlink-s__h100-gke-a3-elideng__1.txt - elideng repo assets/lab-04/nvlink-status.txt
    @d9f1e65e."""
    [gpu] = parse_nvlink_status(real("nvidia-smi-nvlink-s__h100-gke-a3-elideng__1.txt"))
    assert gpu.name == "NVIDIA H100 80GB HBM3" and len(gpu.links) == 18
    assert gpu.links[17].speed_gbps == 26.562 and not gpu.links[0].inactive


@pytest.mark.parametrize(
    ("name", "gpus", "links"),
    [
        # stas00/ml-engineering compute/accelerator/nvidia/debug.md l.306-309 @1c4d240d: links 1-16 elided
        ("nvidia-smi-nvlink-s__h100-stas00__excerpt1.txt", 1, [0, 17]),
        # NVIDIA/k8s-test-infra issue 371 (giuliocalzo): GB200 18 x 53.125 GB/s, ends with a literal "...".
        ("nvidia-smi-nvlink-s__gb200-18links-53GBs-k8stestinfra371__excerpt7.txt", 2, list(range(18))),
    ],
)
def test_status_excerpts(real: Real, name: str, gpus: int, links: list[int]) -> None:
    """EXCERPT fixtures: strict parsing rejects the author's elision; ``partial=True`` keeps the shown
    links."""
    text = real(name)
    with pytest.raises(ParseError, match="elided"):
        parse_nvlink_status(text)
    result = parse_nvlink_status(text, partial=True)
    assert len(result) == gpus and [link.link for link in result[0].links] == links
    if "gb200" in name:
        assert result[0].links[0].speed_gbps == 53.125 and result[1].name == "NVIDIA GB200"
        assert [link.link for link in result[1].links] == [0, 1]


def test_errors_a100_gpu0(real: Real) -> None:
    """nvidia-smi-nvlink-e__a100x8-40gb-gpu0-brevdoc__2.txt - capture log id 60859828466, GPU 0 block of
    ``nvidia-smi nvlink -e -i $i``; 12 links, all counters 0."""
    [gpu] = parse_nvlink_errors(real("nvidia-smi-nvlink-e__a100x8-40gb-gpu0-brevdoc__2.txt"))
    assert gpu.name == "NVIDIA A100-SXM4-40GB" and sorted(gpu.links) == list(range(12))
    assert gpu.links[11] == {"Replay Errors": 0, "Recovery Errors": 0, "CRC Errors": 0}
    assert gpu.total("CRC Errors") == 0


def test_errors_h100_excerpt(real: Real) -> None:
    """nvidia-smi-nvlink-e__h100-stas00__excerpt1.txt - stas00/ml-engineering debug.md lines 287-300
    @1c4d240d;
    links 2-16 elided with ``[...]``."""
    text = real("nvidia-smi-nvlink-e__h100-stas00__excerpt1.txt")
    with pytest.raises(ParseError, match="elided"):
        parse_nvlink_errors(text)
    [gpu] = parse_nvlink_errors(text, partial=True)
    assert sorted(gpu.links) == [0, 1, 17] and gpu.links[17]["Recovery Errors"] == 0
    assert gpu.uuid == "GPU-abcdefab-cdef-abdc-abcd-abababababab"


def test_truncated_raises(real: Real) -> None:
    status8 = real("nvidia-smi-nvlink-s__a100x8-sxm4-80gb-gpud__2.txt")
    with pytest.raises(ParseError, match="different link counts"):
        parse_nvlink_status(head(status8, 20))  # GPU 1 cut after link 5
    with pytest.raises(ParseError, match="no link lines"):
        parse_nvlink_status(head(real("nvidia-smi-nvlink-s__h100-gke-a3-elideng__1.txt"), 1))
    errors = real("nvidia-smi-nvlink-e__a100x8-40gb-gpu0-brevdoc__2.txt")
    with pytest.raises(ParseError, match="counter sets"):
        parse_nvlink_errors(head(errors, 7))  # link 1 lost its CRC line


@pytest.mark.parametrize("text", ["", "Link 0: 25 GB/s\n", "GPU 0: X (UUID: GPU-1)\n\t Link 0: fast\n"])
def test_garbage_raises(text: str) -> None:
    if text:  # empty output is the driver's "no NVLink" for --status (test below), not garbage
        with pytest.raises(ParseError):
            parse_nvlink_status(text)
    with pytest.raises(ParseError):
        parse_nvlink_errors(text)


def test_no_nvlink_is_an_empty_answer(real: Real) -> None:
    """H100 SXM in a VM (driver 580): `nvidia-smi nvlink -s` exits 0 and prints nothing; -L lists the GPU."""
    assert real("nvidia-smi-nvlink-s__h100-sxm-vm-no-nvlink-drv580-device__1.txt") == ""
    assert parse_nvlink_status("") == []
    assert parse_nvlink_status(" \n") == []


def test_inactive_single_link() -> None:
    [gpu] = parse_nvlink_status(
        "GPU 0: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    )
    assert gpu.active_links == 1 and gpu.links[1].inactive and gpu.links[1].speed_gbps is None


def _without_uuid_tabbed(text: str) -> str:
    """CONSTRUCTED from a real capture: the header as newer drivers print it (``GPU n: <name>``, no UUID)
    and tab indentation - no public capture of that exact form was found."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("GPU "):
            out.append(line.split(" (UUID:")[0] + "\n")
        else:
            out.append("\t" + line.lstrip(" ") if line.strip() else line)
    return "".join(out)


def test_status_header_without_uuid_tabs(real: Real) -> None:
    """From nvidia-smi-nvlink-s__a100x8-sxm4-80gb-gpud__2.txt (gpud testdata, see SOURCES.md)."""
    text = _without_uuid_tabbed(real("nvidia-smi-nvlink-s__a100x8-sxm4-80gb-gpud__2.txt"))
    assert "UUID" not in text and "\t" in text
    gpus = parse_nvlink_status(text)
    assert len(gpus) == 8 and {g.uuid for g in gpus} == {None}
    assert gpus[0].name == "NVIDIA A100-SXM4-80GB" and gpus[0].active_links == 12


def test_errors_header_without_uuid(real: Real) -> None:
    """From nvidia-smi-nvlink-e__a100x8-40gb-gpu0-brevdoc__2.txt (already tab-indented)."""
    gpus = parse_nvlink_errors(
        _without_uuid_tabbed(real("nvidia-smi-nvlink-e__a100x8-40gb-gpu0-brevdoc__2.txt"))
    )
    assert (
        gpus[0].uuid is None and gpus[0].name == "NVIDIA A100-SXM4-40GB" and gpus[0].total("CRC Errors") == 0
    )
    with pytest.raises(ParseError, match="UUID"):
        parse_nvlink_status("GPU 0: NVIDIA A100 (UUID: not-a-uuid)\n\t Link 0: 25 GB/s\n")
