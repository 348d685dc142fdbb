"""switchcfg/opensm.py and `clusterforge fabric sm-config`: OpenSM files from the plan, every option name one
OpenSM knows (its option table, below), roots from a discovery."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.errors import InputError
from clusterforge.fabric.expected import expected_links
from clusterforge.fabric.render import Wire, ibnetdiscover_text
from clusterforge.switchcfg.opensm import render_opensm, routing_engine, top_tier
from tests.conftest import CLUSTERS, example_plan

# The option names of OpenSM's opensm.conf (linux-rdma/opensm opensm/osm_subnet.c opt_tbl, commit
# fa74b98c4b604ebb8b6bb348ca3ac065ba418df0): the subset this renderer may write.
OPENSM_OPTIONS = {
    "routing_engine", "lmc", "sm_priority", "partition_config_file", "qos_policy_file", "root_guid_file",
    "qos", "qos_max_vls",
    *(f"{p}_{k}" for p in ("qos_ca", "qos_swe", "qos_sw0", "qos_rtr")
      for k in ("max_vls", "high_limit", "vlarb_high", "vlarb_low", "sl2vl")),
}  # fmt: skip
ENGINES = {"minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS", "nue", "dfsssp", "sssp"}


def _keys(conf: str) -> list[str]:
    return [ln.split()[0] for ln in conf.splitlines() if ln.strip() and not ln.startswith("#")]


def test_fat_tree_fabric() -> None:
    plan = example_plan("h100-ib-1su")
    files = render_opensm(plan.doc, "ib0")
    assert set(files) == {"opensm.conf", "partitions.conf", "qos-policy.conf"}
    conf = files["opensm.conf"]
    assert set(_keys(conf)) <= OPENSM_OPTIONS
    assert "routing_engine ftree,updn\n" in conf and "lmc 0\n" in conf and "sm_priority 15\n" in conf
    assert (
        set(routing_engine(next(f for f in plan.doc["fabrics"] if f["name"] == "ib0")).split(",")) <= ENGINES
    )
    assert "partition_config_file /etc/opensm/partitions.conf\n" in conf and "qos TRUE\n" in conf
    assert "root_guid_file" not in _keys(conf)
    assert files["partitions.conf"].splitlines()[-1] == (
        "Default=0x7fff,ipoib,defmember=full : ALL=full, ALL_SWITCHES=full, SELF=full ;"
    )


def test_roots_are_the_top_tier_from_a_discovery(tmp_path: Path) -> None:
    plan = example_plan("h100-ib-1su")
    fabric = next(f for f in plan.doc["fabrics"] if f["name"] == "ib0")
    roots = top_tier(fabric)
    assert roots and all("spine" in r for r in roots)
    guids = {r: f"0x{i:016x}" for i, r in enumerate(roots, 1)}
    files = render_opensm(plan.doc, "ib0", root_guids=guids, sm_priority=3)
    assert "root_guid_file /etc/opensm/root_guids.conf\n" in files["opensm.conf"]
    assert "sm_priority 3\n" in files["opensm.conf"]
    assert files["root_guids.conf"].splitlines() == list(guids.values())
    with pytest.raises(ValueError, match="no GUID for top-tier"):
        render_opensm(plan.doc, "ib0", root_guids=dict(list(guids.items())[1:]))
    with pytest.raises(ValueError):
        render_opensm(plan.doc, "ib0", sm_priority=16)


def test_roce_fabric_has_no_sm() -> None:
    with pytest.raises(ValueError, match="no subnet manager"):
        render_opensm(example_plan("h100-roce-2su").doc, "roce0")


def test_cli_writes_the_files_with_roots_from_ibnetdiscover(tmp_path: Path) -> None:
    plan = example_plan("h100-ib-1su")
    disc = tmp_path / "ibnetdiscover.txt"
    disc.write_text(ibnetdiscover_text([Wire(e.a, e.b, e.kind == "node-leaf") for e in expected_links(plan)]))
    spec = str(CLUSTERS / "h100-ib-1su.yaml")
    res = CliRunner().invoke(
        app, ["fabric", "sm-config", spec, "--dir", str(tmp_path / "sm"), "--discovery", str(disc)]
    )
    assert res.exit_code == 0, res.output
    roots = (tmp_path / "sm" / "root_guids.conf").read_text().split()
    assert len(roots) == len(top_tier(next(f for f in plan.doc["fabrics"] if f["name"] == "ib0")))
    assert all(g.startswith("0x") for g in roots)
    bad = CliRunner().invoke(
        app, ["fabric", "sm-config", spec, "--dir", str(tmp_path / "x"), "--fabric", "nope"]
    )
    assert (bad.exit_code == 2 or isinstance(bad.exception, InputError)) and not (tmp_path / "x").exists()
