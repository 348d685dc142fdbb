"""ofed_info -s and mlxfwmanager on their real captures (sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError, mlxfwmanager, ofed_info

Real = Callable[[str], str]


MLNX, DOCA = "MLNX_OFED_LINUX", "OFED-internal"


@pytest.mark.parametrize(
    ("name", "flavour", "version", "release"),
    [
        # code-index id 19926464626: Azure HPC VM, Debian 10, MLNX_OFED 23.10
        ("ofed_info-s__azure-vm-debian10-mlnx-ofed-23.10-cx7vf__1.txt", MLNX, "23.10-1.1.9.0", "23.10"),
        # code-index id 60906727967: RoCE host, MLNX_OFED 5.4
        ("ofed_info-s__rdma-host-mlnx-ofed-5.4-tcpdump-cnnote__2.txt", MLNX, "5.4-3.1.0.0", "5.4"),
        # code-index id 3695655753: DOCA-OFED naming
        ("ofed_info-s__doca-ofed-25.10-trex-mlx5-ofed-internal__3.txt", DOCA, "25.10-1.7.1", "25.10"),
    ],
)  # fmt: skip
def test_ofed_info_real(real: Real, name: str, flavour: str, version: str, release: str) -> None:
    info = ofed_info.parse(real(name))
    assert (info.flavour, info.version, info.release) == (flavour, version, release)
    assert info.matches(version) and info.matches(release)


def test_ofed_info_pin_boundaries_and_garbage() -> None:
    info = ofed_info.parse("OFED-internal-25.10-1.7.1:\n")  # the DOCA capture's line
    assert info.matches("25.10-1.7") and not info.matches("25.1") and not info.matches("2.10.0")
    for bad in ("", "bash: ofed_info: command not found\n", "MLNX_OFED_LINUX-23.10-1.1.9.0:\nextra\n"):
        with pytest.raises(ParseError):
            ofed_info.parse(bad)


def test_mlxfwmanager_cx4lx_no_matching_image(real: Real) -> None:
    """mlxfwmanager__cx4-lx-50g-no-matching-image-doca-ofed-rhel10-wporter__1.txt - code-index id
    10272357825; Available ``N/A``, mst device path, no Base GUID line."""
    [d] = mlxfwmanager.parse(
        real("mlxfwmanager__cx4-lx-50g-no-matching-image-doca-ofed-rhel10-wporter__1.txt")
    )
    assert (d.device_type, d.part_number, d.psid, d.firmware) == (
        "ConnectX4LX", "MCX4131A-GCA_Ax", "MT_2430110032", "14.20.1010")  # fmt: skip
    assert d.versions == {"FW": ("14.20.1010", None), "PXE": ("3.5.0210", None)}
    assert d.pci_device == "/dev/mst/mt4117_pciconf0" and d.base_guid is None and d.base_mac == "98039b63e56c"
    assert d.status == "No matching image found"


def test_mlxfwmanager_bluefield_up_to_date(real: Real) -> None:
    """mlxfwmanager__bluefield1-smartnic-nvme-row-up-to-date-ofed-install__2.txt - code-index id 2429866324;
    an extra NVMe row, bare BDF, trailing spaces on the table rows."""
    [d] = mlxfwmanager.parse(
        real("mlxfwmanager__bluefield1-smartnic-nvme-row-up-to-date-ofed-install__2.txt")
    )
    assert d.firmware == "18.26.4012" and d.versions["NVMe"] == ("20.1.0003", "20.1.0003")
    assert list(d.versions) == ["FW", "NVMe", "PXE", "UEFI"] and d.pci_device == "02:00.0"
    assert d.base_guid == "98039b0300cc223c" and d.status == "Up to date"


def test_mlxfwmanager_truncated(real: Real) -> None:
    text = real("mlxfwmanager__bluefield1-smartnic-nvme-row-up-to-date-ofed-install__2.txt")
    with pytest.raises(ParseError, match="truncated"):
        mlxfwmanager.parse(text.split("  Status:")[0])
    with pytest.raises(ParseError, match="before the first"):
        mlxfwmanager.parse("-E- No devices found\n")
