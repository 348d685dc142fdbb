"""mlnx_qos.parse on every ``mlnx_qos__*`` real capture and mlxconfig.parse_query on published output.

The shared real set has no ``mlxconfig`` capture, so three published outputs were saved verbatim (from the
first ``Device #1:`` line, surrounding prose dropped) under tests/unit/hw/fixtures/:

- mlxconfig-q__cx4lx-mstconfig-nextboot-linux-rdma-2019.txt: linux-rdma mailing list, Jianchao Wang,
  "RDMA on Mellanox ConnectX-4 Lx cannot work", 2019-07-01, Message-ID
  <13dde97d-77a7-7663-1766-068082342e05@gmail.com>
  (https://lore.kernel.org/linux-rdma/13dde97d-77a7-7663-1766-068082342e05@gmail.com/), read from the code
  index (file id 7552657045). ``mstconfig -d 01:00.1 q`` (mstflint's mlxconfig, same output format), older
  MFT layout: 9-space indent, 36/16-column widths, "Next Boot" column only.
- mlxconfig-q__cx4-vpi-mcx455a-nextboot-ib-labnote.txt: a markdown lab note on the Mellanox MCX455A-ECAT
  ConnectX-4 VPI ("sudo mlxconfig -d /dev/mst/mt4115_pciconf1 query", "Sample output"), code-index file id
  52431724413, owning repository not resolved. Newer MFT layout (8-space indent, 44/20 widths), a value wider
  than its column (PCI_ATOMIC_MODE), LINK_TYPE_P1 IB(1).
- mlxconfig-q__cx5-default-current-nextboot-star-shsdocs__excerpt.txt: HewlettPackard/shs-docs
  docs/portal/developer-portal/install/firmware_management.md @0d6072ee (slingshot-firmware update log):
  ``Default  Current  Next Boot`` columns with a ``*`` row; EXCERPT - the author elided rows with ``...``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError, mlnx_qos, mlxconfig
from clusterforge.hw.mlxconfig import MlxParam

from .conftest import head

Real = Callable[[str], str]


# -------------------------------------------------------------------------------------------- mlnx_qos
def test_mlnx_qos_fw_controlled_pfc3(real: Real) -> None:
    """mlnx_qos__cx5-roce-fw-controlled-dcbx-ets-pfc3-pve-blog__3.txt - code-index blog post id 310222282
    (``mlnx_qos -i mce0``; UNSURE-IF-VERBATIM per SOURCES.md but host-specific values)."""
    q = mlnx_qos.parse(real("mlnx_qos__cx5-roce-fw-controlled-dcbx-ets-pfc3-pve-blog__3.txt"))
    assert (q.dcbx_mode, q.trust_state, q.cable_len) == ("Firmware controlled", "dscp", 7)
    assert (
        q.dscp2prio[3] == (31, 30, 29, 28, 27, 26, 25, 24)
        and q.prio_of_dscp(26) == 3
        and q.prio_of_dscp(48) == 6
    )
    assert q.receive_buffer_sizes == (130944, 130944, 0, 0, 0, 0, 0, 0) and q.max_buffer_size == 262016
    assert q.pfc_enabled == (False, False, False, True, False, False, False, False) and q.pfc_priorities == (
        3,
    )
    assert q.pfc_buffer == (0, 0, 0, 1, 0, 0, 0, 0)
    assert [(t.tc, t.tsa, t.bw_percent, t.priorities) for t in q.tcs] == [
        (0, "ets", 50, (0, 1, 2, 4, 5, 7)), (3, "ets", 50, (3,)), (6, "vendor", None, (6,))]  # fmt: skip
    assert q.tcs[0].ratelimit == "unlimited"


def test_mlnx_qos_os_controlled_no_buffer_table(real: Real) -> None:
    """mlnx_qos__cx-eth4-mlx5_2-trust-dscp-pfc-prio3-only-tsa-vendor-netarbiter__4.txt - github att/netarbiter
    nvmf/OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md lines 43-73 @2c2682e6 (``mlnx_qos -i eth4 --pfc
    0,0,0,1,0,0,0,0``, MLNX_OFED of early 2018): no receive-buffer table, no ``buffer`` row under PFC, every
    TC ``tsa: vendor`` with no bandwidth share, and TC 0 carrying priority 1 (the kernel's default map)."""
    name = "mlnx_qos__cx-eth4-mlx5_2-trust-dscp-pfc-prio3-only-tsa-vendor-netarbiter__4.txt"
    q = mlnx_qos.parse(real(name))
    assert (q.dcbx_mode, q.trust_state, q.cable_len) == ("OS controlled", "dscp", 7)
    assert q.prio_of_dscp(26) == 3 and q.prio_of_dscp(0) == 0 and q.prio_of_dscp(63) == 7
    assert q.pfc_priorities == (3,) and q.pfc_buffer is None
    assert q.receive_buffer_sizes is None and q.max_buffer_size is None
    assert [(t.tc, t.tsa, t.bw_percent) for t in q.tcs][:2] == [(0, "vendor", None), (1, "vendor", None)]
    assert q.tcs[0].priorities == (1,) and q.tcs[1].priorities == (0,) and len(q.tcs) == 8


def test_mlnx_qos_excerpt(real: Real) -> None:
    """mlnx_qos__roce-rdma0-dscp-husky__excerpt2.txt - host-bench/husky README.md lines 89-99 @a665c9dd.
    EXCERPT: only DCBX/trust/dscp2prio lines -> strict raises (no PFC table); partial reads the map."""
    text = real("mlnx_qos__roce-rdma0-dscp-husky__excerpt2.txt")
    with pytest.raises(ParseError, match="PFC"):
        mlnx_qos.parse(text)
    q = mlnx_qos.parse(text, partial=True)
    assert (q.dcbx_mode, q.trust_state) == ("OS controlled", "dscp") and q.dscp2prio[0] == (
        7,
        6,
        5,
        4,
        3,
        2,
        1,
        0,
    )
    assert q.pfc_enabled is None and q.tcs == () and len(q.dscp2prio) == 8


def test_mlnx_qos_truncated_and_garbage(real: Real) -> None:
    text = real("mlnx_qos__cx5-roce-fw-controlled-dcbx-ets-pfc3-pve-blog__3.txt")
    with pytest.raises(ParseError, match="dscp2prio map incomplete"):
        mlnx_qos.parse(head(text, 6), partial=True)
    with pytest.raises(ParseError, match="PFC configuration"):
        mlnx_qos.parse(head(text, 15))  # PFC table cut before its "enabled" row
    with pytest.raises(ParseError, match="tc:"):
        mlnx_qos.parse(head(text, 17))
    for garbage in ("", "hello world\n", "DCBX mode: OS controlled\n"):
        with pytest.raises(ParseError):
            mlnx_qos.parse(garbage)


# ------------------------------------------------------------------------------------------- mlxconfig
def test_mlxconfig_mstconfig_2019(local: Callable[[str], str]) -> None:
    """mlxconfig-q__cx4lx-mstconfig-nextboot-linux-rdma-2019.txt (linux-rdma list, 2019, see module
    docstring)."""
    [dev] = mlxconfig.parse_query(local("mlxconfig-q__cx4lx-mstconfig-nextboot-linux-rdma-2019.txt"))
    assert (dev.index, dev.device_type, dev.name, dev.description, dev.device) == (
        1,
        "ConnectX4LX",
        None,
        None,
        "01:00.1",
    )
    assert dev.columns == ("Next Boot",) and len(dev.params) == 115
    assert dev.next_boot("SRIOV_EN") == "True(1)" and dev.next_boot("NUM_OF_VFS") == "8"
    assert "LINK_TYPE_P1" not in dev.params  # Ethernet-only CX-4 Lx: the question in that mail
    p = dev.params["EXP_ROM_UEFI_x86_ENABLE"]
    assert (p.next_boot, p.current, p.default, p.modified, p.read_only) == (
        "False(0)",
        None,
        None,
        False,
        False,
    )
    assert dev.params["ADVANCED_PCI_SETTINGS"].next_boot == "False(0)"
    assert MlxParam.code(dev.next_boot("CQE_COMPRESSION")) == 0 and MlxParam.code("16384") == 16384


def test_mlxconfig_cx4_vpi_labnote(local: Callable[[str], str]) -> None:
    """mlxconfig-q__cx4-vpi-mcx455a-nextboot-ib-labnote.txt (code-index lab note, see module docstring)."""
    [dev] = mlxconfig.parse_query(local("mlxconfig-q__cx4-vpi-mcx455a-nextboot-ib-labnote.txt"))
    assert (dev.device_type, dev.name, dev.device) == (
        "ConnectX4",
        "MCX455A-ECA_Ax",
        "/dev/mst/mt4115_pciconf1",
    )
    assert (
        dev.description
        == "ConnectX-4 VPI adapter card; EDR IB (100Gb/s) and 100GbE; single-port QSFP28; PCIe3.0 x16; "
        "ROHS R6"
    )
    assert dev.next_boot("LINK_TYPE_P1") == "IB(1)" and MlxParam.code(dev.next_boot("LINK_TYPE_P1")) == 1
    assert dev.next_boot("PCI_ATOMIC_MODE") == "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"
    assert (
        dev.next_boot("PCI_DOWNSTREAM_PORT_OWNER") == "Array[0..15]" and MlxParam.code("Array[0..15]") is None
    )
    assert dev.next_boot("SRIOV_EN") == "False(0)" and len(dev.params) == 111


def test_mlxconfig_default_current_next_excerpt(local: Callable[[str], str]) -> None:
    """mlxconfig-q__cx5-default-current-nextboot-star-shsdocs__excerpt.txt (HewlettPackard/shs-docs,
    excerpt)."""
    text = local("mlxconfig-q__cx5-default-current-nextboot-star-shsdocs__excerpt.txt")
    with pytest.raises(ParseError, match="elided"):
        mlxconfig.parse_query(text)
    [dev] = mlxconfig.parse_query(text, partial=True)
    assert dev.columns == ("Default", "Current", "Next Boot") and dev.name == "MCX515A-CCA_Ax_Bx"
    adv = dev.params["ADVANCED_PCI_SETTINGS"]
    assert (adv.default, adv.current, adv.next_boot, adv.modified) == ("False(0)", "True(1)", "True(1)", True)
    assert not adv.pending_change
    assert (
        dev.params["MEMIC_SIZE_LIMIT"].current == "_256KB(1)" and not dev.params["SAFE_MODE_ENABLE"].modified
    )


def test_mlxconfig_pending_change_and_read_only() -> None:
    """Row layout per mstflint's printSingleParam: ``%s%s     %-44s`` (``*`` / ``RO`` flags) then 20-wide
    values."""
    text = (
        "\nDevice #1:\n----------\n\nDevice type:        ConnectX7           \nName:               N/A\n"
        "Description:        N/A\nDevice:             0000:18:00.0        \n\n"
        "Configurations:                                          Current         Next Boot\n"
        "*       NUM_OF_VFS                                  16                  8                   \n"
        " RO     MEMIC_BAR_SIZE                              0                   0                   \n"
        "The '*' shows parameters with next value different from default/current value.\n\n"
        "The 'RO' shows parameters which are for read only and cannot be changed\n"
    )
    [dev] = mlxconfig.parse_query(text)
    vfs, memic = dev.params["NUM_OF_VFS"], dev.params["MEMIC_BAR_SIZE"]
    assert (vfs.current, vfs.next_boot, vfs.modified, vfs.pending_change) == ("16", "8", True, True)
    assert memic.read_only and not memic.modified and dev.columns == ("Current", "Next Boot")


def test_mlxconfig_truncated_and_garbage(local: Callable[[str], str]) -> None:
    text = local("mlxconfig-q__cx4-vpi-mcx455a-nextboot-ib-labnote.txt")
    with pytest.raises(ParseError, match=r"lacks \['Device'\]"):
        mlxconfig.parse_query(head(text, 6))
    with pytest.raises(ParseError, match="no configuration rows"):
        mlxconfig.parse_query(head(text, 9))
    for garbage in (
        "",
        "hello\n",
        "-E- Failed to open the device\n",
        "Device #1:\nDevice type: X\nDevice: y\nConfigurations:   Next Boot\n  A  1  2\n",
    ):
        with pytest.raises(ParseError):
            mlxconfig.parse_query(garbage)
