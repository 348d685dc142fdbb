"""ParseError and shared helpers."""

from __future__ import annotations

import pytest

from clusterforge import hw
from clusterforge.hw._common import content_lines, is_elision, parse_cpulist, to_bytes
from clusterforge.hw.errors import ParseError


def test_parse_error_is_value_error_and_names_tool_and_line() -> None:
    err = ParseError("ibstat", "missing Port GUID", line_no=7, line="  State: Active")
    assert isinstance(err, ValueError)
    assert err.tool == "ibstat" and err.reason == "missing Port GUID" and err.line_no == 7
    assert str(err) == "ibstat: missing Port GUID (line 7: '  State: Active')"


def test_package_exports_parse_error_and_submodules() -> None:
    assert hw.ParseError is ParseError
    for name in (
        "nvidia_smi",
        "dcgmi",
        "nvbandwidth",
        "nccl_tests",
        "perftest",
        "ibstat",
        "ibv_devinfo",
        "ibdev2netdev",
        "rdma_link",
        "show_gids",
        "mlnx_qos",
        "mlxconfig",
        "xid",
        "procfs",
    ):
        assert hasattr(hw, name), name


def test_cpulist() -> None:
    assert parse_cpulist("0-2,8,10-11") == (0, 1, 2, 8, 10, 11)
    with pytest.raises(ValueError):
        parse_cpulist("0-")
    with pytest.raises(ValueError):
        parse_cpulist("5-2")


@pytest.mark.parametrize("line", ["[...]", "   [...]", "...", "(...)"])
def test_elision_markers(line: str) -> None:
    assert is_elision(line)
    assert not is_elision("Link 0: 25 GB/s")


def test_content_lines() -> None:
    text = "  GPU 0: x\r\n\n\t Link 0: 26 GB/s\n[...]\nGPU 1: y\n"
    assert list(content_lines("t", text, True, "cut")) == [
        (1, "  GPU 0: x", "GPU 0: x"),
        (3, "\t Link 0: 26 GB/s", "Link 0: 26 GB/s"),
        (5, "GPU 1: y", "GPU 1: y"),
    ]
    with pytest.raises(ParseError, match="cut") as exc:
        list(content_lines("t", text, False, "cut"))
    assert exc.value.line_no == 4


@pytest.mark.parametrize(
    ("value", "human", "want"),
    [
        (None, False, None),
        (1048576, False, 1048576),
        ("274877906944", False, 274877906944),  # lsblk --bytes from older util-linux: a numeric string
        ("11.6T", True, int(11.6 * (1 << 40))),  # findmnt --df without --bytes (gpud's capture)
        ("512M", True, 512 << 20),
        ("4KiB", True, 4096),
        (2.5, True, 2),
    ],
)
def test_to_bytes_one_reader_for_findmnt_and_lsblk(value: object, human: bool, want: int | None) -> None:
    assert to_bytes("t", value, "size", human=human) == want


@pytest.mark.parametrize(
    ("value", "human", "match"),
    [
        ("1.8T", False, "run with --bytes"),
        (True, True, "not a size"),
        ("lots", True, "not a size"),
        ("-5", True, "not a size"),
        (2.5, False, "run with --bytes"),
    ],
)
def test_to_bytes_refuses_what_is_not_a_size(value: object, human: bool, match: str) -> None:
    with pytest.raises(ParseError, match=match):
        to_bytes("t", value, "size", human=human)
