"""Reading plan.json for the lab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterforge.errors import InputError
from clusterforge.lab import labplan, sshkeys
from clusterforge.lab.synthetic import make_plan


def test_parse_synthetic_plan(tmp_path: Path) -> None:
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(make_plan()))
    plan = labplan.load(f)
    assert plan.cluster == "lab"
    assert [n.name for n in plan.nodes] == ["roce-01", "roce-02", "ib-01", "ib-02"]
    assert [n.mgmt_ip for n in plan.nodes] == [f"10.244.0.{i}" for i in range(11, 15)]
    roce, ib = plan.node("roce-01"), plan.node("ib-01")
    assert len(roce.rails) == 8 and roce.rails[0].netdev == "enp24s0np0" and ib.rails[0].netdev == "ibp24s0"
    assert roce.rails[0].bridge == "cfbr-roce0-0" and ib.rails[7].bridge == "cfbr-ib0-7"
    assert plan.pools == {"roce": ["roce-01", "roce-02"], "ib": ["ib-01", "ib-02"]}
    assert plan.sku("h100-sxm-8x400g-ib")["name"] == "h100-sxm-8x400g-ib"


def test_sku_list_form() -> None:
    raw = make_plan()
    raw["skus"] = list(raw["skus"].values())
    assert labplan.parse(raw).sku("h100-sxm-8x400g-roce")["name"] == "h100-sxm-8x400g-roce"


def test_missing_macs_are_derived() -> None:
    raw = make_plan({"roce": 1})
    del raw["nodes"][0]["mgmt_mac"]
    del raw["nodes"][0]["rails"][2]["mac"]
    n = labplan.parse(raw).nodes[0]
    assert n.mgmt_mac == "02:cf:00:00:00:00" and n.rails[2].mac == "02:cf:00:03:00:00"


@pytest.mark.parametrize("ip", ["10.244.1.5", "10.244.0.1", "bogus"])
def test_bad_management_address(ip: str) -> None:
    raw = make_plan({"roce": 1})
    raw["nodes"][0]["mgmt_ip"] = ip
    with pytest.raises(InputError, match="mgmt_ip"):
        labplan.parse(raw)


def test_duplicates_reported() -> None:
    raw = make_plan({"roce": 2})
    raw["nodes"][1]["mgmt_ip"] = raw["nodes"][0]["mgmt_ip"]
    with pytest.raises(InputError, match="unique"):
        labplan.parse(raw)


def test_unknown_node() -> None:
    with pytest.raises(InputError):
        labplan.parse(make_plan()).node("nope")


def test_known_hosts_lines() -> None:
    n = labplan.parse(make_plan()).node("ib-02")
    assert sshkeys.known_hosts_lines([(n, "ssh-ed25519 AAAAC3Nza root@ib-02")]) == [
        "ib-02,10.244.0.14 ssh-ed25519 AAAAC3Nza"
    ]


def test_l2_identity_of_labs_side_by_side() -> None:
    """Labs on one host share cfbr0 (and the rail bridges of a fabric name): other ordinals, other MACs."""
    main = labplan.parse(make_plan({"roce": 2}))
    same = labplan.parse(make_plan({"roce": 2}, cluster="other", first_ip=200))
    apart = labplan.parse(make_plan({"roce": 2}, cluster="other", first_ip=200, first_ordinal=0x100))
    ours = set().union(*(labplan.l2_identity(n) for n in main.nodes))
    clash = set().union(*(labplan.l2_identity(n) for n in same.nodes)) & ours
    assert ("cfbr0", "02:cf:00:00:00:00") in clash and (
        "cfbr0",
        "02:cf:01:00:00:00",
    ) in clash  # both veth ends
    assert ("cfbr-roce0-0", "02:cf:00:01:00:00") in clash  # a rail on the same fabric's bridge
    assert not {a for a in clash if a[1].startswith("10.")}  # the addresses alone differ
    assert not set().union(*(labplan.l2_identity(n) for n in apart.nodes)) & ours
    assert [n.mgmt_ip for n in apart.nodes] == ["10.244.0.200", "10.244.0.201"]


def test_a_lab_refuses_a_mac_another_running_lab_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.lab import Lab, node

    running = tmp_path / "lab" / "nodes" / "roce-01"
    running.mkdir(parents=True)
    (running / "node-plan.json").write_text(json.dumps(make_plan({"roce": 1})["nodes"][0]))
    monkeypatch.setattr(node, "supervisor_pid", lambda paths: 4242)  # that node runs
    clashing = Lab(make_plan({"roce": 1}, cluster="cycle", first_ip=250), state_base=tmp_path)
    with pytest.raises(Exception, match=r"lab/roce-01 runs with .*02:cf:00:00:00:00.*stop that lab first"):
        clashing._check_conflicts()
    apart = make_plan({"roce": 1}, cluster="cycle", first_ip=250, first_ordinal=0x100)
    Lab(apart, state_base=tmp_path)._check_conflicts()  # other address and MACs: no refusal
