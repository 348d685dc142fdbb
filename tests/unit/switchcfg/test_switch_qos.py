"""Rendered switch QoS parses and agrees with the host side of the same plan (docs/switch-qos.md)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
import yaml

from clusterforge.plan import Plan, build_plan
from clusterforge.plan.cabling import cable_sheet
from clusterforge.spec import load_spec_text
from clusterforge.spec.netcatalog import port_name
from clusterforge.switchcfg import (
    host_qos,
    ib_qos,
    nvue_yaml,
    render_ib_qos,
    render_nvue,
    render_sonic,
    roce_qos,
    switch_configs,
)
from clusterforge.switchcfg.ports import switch_ports
from tests.conftest import REPO, example_plan

# sonic-buildimage files/build_templates/qos_config.j2 @0791705b: DSCP_TO_TC_MAP|AZURE entries that matter
SONIC_DEFAULT_DSCP_TO_TC = {"3": "3", "4": "4", "26": "1", "46": "5", "48": "6"}
SONIC_DEFAULT_PFC_ENABLE = "3,4"


def plan_of(name: str) -> Plan:
    return example_plan(name)


def variant(**roce: Any) -> Plan:
    """The lab spec with other RoCE markings: the renderers must follow the plan, not constants."""
    text = (REPO / "inventory/clusters/lab.yaml").read_text()
    old = "roce: {lossless_priority: 3, dscp: 26, cnp_dscp: 48, cnp_priority: 6, mtu: 9000, ecn: true}"
    assert old in text
    values = {"lossless_priority": 3, "dscp": 26, "cnp_dscp": 48, "cnp_priority": 6, "mtu": 9000, "ecn": True}
    values.update(roce)
    new = "roce: {" + ", ".join(
        f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items()
    )
    return build_plan(load_spec_text(text.replace(old, new + "}"), "lab-variant.yaml"))


@cache
def _sheet_ports(name: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in cable_sheet(plan_of(name)).cables:
        out.setdefault(c.a_device, set()).add(c.a_port_name)
        out.setdefault(c.b_device, set()).add(c.b_port_name)
    return out


def cabled_ports(plan: Plan, switch: str) -> set[str]:
    return _sheet_ports(plan.name)[switch]


def roce_switches(plan: Plan) -> list[str]:
    return [s[0] for f in plan.doc["fabrics"] if f["type"] == "roce" for s in f["switches"]]


CASES = [("h100-roce-2su", s) for s in ("roce0-leaf-su0-r0", "roce0-leaf-su1-r7", "roce0-spine-p0-s3")] + [
    ("lab", "roce0-leaf-su0-r2"),
]


@pytest.mark.parametrize(("spec", "switch"), CASES)
def test_sonic_matches_the_hosts(spec: str, switch: str) -> None:
    plan = plan_of(spec)
    host = host_qos(plan.doc)
    cfg = json.loads(json.dumps(render_sonic(plan.doc, switch)))  # what lands in the file
    dscp = cfg["DSCP_TO_TC_MAP"]["AZURE"]
    assert set(dscp) == {str(d) for d in range(64)}, "all 64 code points, so no default entry survives"
    assert dscp[str(host["dscp"])] == str(host["lossless_priority"]) == "3"
    assert dscp["26"] != SONIC_DEFAULT_DSCP_TO_TC["26"], "the SONiC default puts DSCP 26 on lossy TC1"
    assert dscp[str(host["cnp_dscp"])] == str(host["cnp_priority"]) == "6"
    assert {tc for d, tc in dscp.items() if d not in ("26", "48")} == {"0"}
    assert cfg["PORT_QOS_MAP"]["global"] == {"dscp_to_tc_map": "AZURE"}

    ports = switch_ports(plan.doc, switch).ports
    assert ports and len(cfg["PORT_QOS_MAP"]) == len(ports) + 1
    lossless = str(host["lossless_priority"])
    for name, port in cfg["PORT_QOS_MAP"].items():
        if name == "global":
            continue
        assert set(port["pfc_enable"].split(",")) == {str(p) for p in host["pfc_priorities"]} == {"3"}
        assert port["pfc_enable"] != SONIC_DEFAULT_PFC_ENABLE
        assert port["pfcwd_sw_enable"] == lossless
        assert port["dscp_to_tc_map"] == port["tc_to_pg_map"] == "AZURE"
        assert cfg["BUFFER_PG"][f"{name}|{lossless}"]["profile"] in cfg["BUFFER_PROFILE"]
        roce_q, cnp_q = cfg["QUEUE"][f"{name}|{lossless}"], cfg["QUEUE"][f"{name}|{host['cnp_priority']}"]
        assert cfg["SCHEDULER"][cnp_q["scheduler"]] == {"type": "STRICT"}
        assert cfg["SCHEDULER"][roce_q["scheduler"]]["type"] == "DWRR"
        assert cfg["WRED_PROFILE"][roce_q["wred_profile"]]["ecn"] == "ecn_all"
        assert cfg["PFC_WD"][name]["action"] == "drop"
    assert cfg["TC_TO_PRIORITY_GROUP_MAP"]["AZURE"][lossless] == lossless
    assert cfg["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"]["AZURE"] == {lossless: lossless}
    assert cfg["TC_TO_QUEUE_MAP"]["AZURE"][lossless] == lossless

    # ECN marks before PFC pauses: min < max < the lossless PG's pause threshold, all in bytes
    wred = cfg["WRED_PROFILE"]["ROCE_LOSSLESS"]
    profile = cfg["BUFFER_PROFILE"]["pg_lossless_roce_profile"]
    assert int(wred["green_min_threshold"]) < int(wred["green_max_threshold"]) < int(profile["static_th"])
    assert int(profile["size"]) == int(profile["xon"]) + int(profile["xoff"])


@pytest.mark.parametrize(("spec", "switch"), CASES)
def test_nvue_matches_the_hosts(spec: str, switch: str) -> None:
    plan = plan_of(spec)
    host = host_qos(plan.doc)
    policy = roce_qos(plan.doc, "roce0")
    docs = yaml.safe_load(nvue_yaml(render_nvue(plan.doc, switch)))
    assert isinstance(docs, list) and len(docs) == 1  # the `nv config patch` format
    qos = docs[0]["set"]["qos"]
    assert qos["roce"] == {"enable": "on", "mode": "lossless"}
    mapping = qos["mapping"]["default-global"]
    assert mapping["trust"] == "l3"  # DSCP, like `mlnx_qos --trust dscp` on the hosts
    assert mapping["dscp"][str(host["dscp"])]["switch-priority"] == host["lossless_priority"] == 3
    assert mapping["dscp"][str(host["cnp_dscp"])]["switch-priority"] == host["cnp_priority"] == 6
    pfc = qos["pfc"]["default-global"]
    assert {int(p) for p in pfc["switch-priority"]} == set(host["pfc_priorities"]) == {3}
    assert pfc["tx"] == pfc["rx"] == "enable"
    sched = qos["egress-scheduler"]["default-global"]["traffic-class"]
    assert sched[str(policy.cnp_tc)] == {"mode": "strict"}
    assert sched[str(policy.lossless_tc)]["mode"] == "dwrr"
    assert qos["egress-queue-mapping"]["default-global"]["switch-priority"]["3"]["traffic-class"] == 3
    ecn = qos["congestion-control"]["default-global"]["traffic-class"]["3"]
    assert ecn["ecn"] == "enable"
    assert ecn["min-threshold"] < ecn["max-threshold"] < policy.pfc_xoff_threshold_bytes
    assert (ecn["min-threshold"], ecn["max-threshold"]) == (policy.ecn_min_bytes, policy.ecn_max_bytes)
    sp = switch_ports(plan.doc, switch)
    ports = {port_name(sp.model, sp.port_speed_gbps, p, "cumulus") for p in sp.ports}
    assert all(p.startswith("swp") and "s" in p[3:] for p in ports)  # SN5600 at 400G: split cages, swp1s0
    assert ports <= cabled_ports(plan, switch), "the same names as the cabling sheet"
    assert set(docs[0]["set"]["interface"]) == ports
    assert qos["pfc-watchdog"]["polling-interval"] > 0


def test_host_side_is_what_the_roles_get() -> None:
    plan = plan_of("h100-roce-2su")
    host = host_qos(plan.doc)
    # what the rdma role applies: the nodes' compiled desired state (plan/desired.py)
    knobs = next(r["qos"] for n in plan.doc["nodes"] for r in n["desired"]["rails"] if r["qos"])
    for key in ("dscp", "lossless_priority", "cnp_dscp", "cnp_priority", "pfc_vector", "trust", "ecn"):
        assert host[key] == knobs[key], key
    assert host["dscp_to_priority"] == knobs["dscp2prio"]
    assert host["tos"] == knobs["tos"] == (host["dscp"] << 2) | 2 == 106
    assert host["pfc_vector"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert host["trust"] == "dscp"


def _switch_side(plan: Plan) -> dict[str, Any]:
    """The markings as the rendered switch configs state them (SONiC CONFIG_DB and NVUE)."""
    switch = roce_switches(plan)[0]
    sonic = render_sonic(plan.doc, switch)
    dscp_tc = {d: int(tc) for d, tc in sonic["DSCP_TO_TC_MAP"]["AZURE"].items() if tc != "0"}
    port = next(v for k, v in sonic["PORT_QOS_MAP"].items() if k != "global")
    nvue = render_nvue(plan.doc, switch)["set"]["qos"]
    nvue_dscp = {d: e["switch-priority"] for d, e in nvue["mapping"]["default-global"]["dscp"].items()}
    strict = [
        int(tc)
        for tc, e in nvue["egress-scheduler"]["default-global"]["traffic-class"].items()
        if e == {"mode": "strict"}
    ]
    assert dscp_tc == nvue_dscp, "SONiC and NVUE map the same DSCPs"
    return {
        "dscp_to_priority": dscp_tc,
        "pfc_priorities": sorted(int(p) for p in port["pfc_enable"].split(",")),
        "nvue_pfc": sorted(int(p) for p in nvue["pfc"]["default-global"]["switch-priority"]),
        "cnp_strict": strict,
    }


@pytest.mark.parametrize(
    "roce",
    [{}, {"lossless_priority": 4, "dscp": 34, "cnp_dscp": 46, "cnp_priority": 5}, {"lossless_priority": 5}],
)
def test_switches_and_nodes_move_together(roce: dict[str, int]) -> None:
    """Change the markings in the spec: the nodes' desired state (what the rdma role applies and the
    validators certify), the host side and both switch renderings all follow, and agree with each other."""
    plan = variant(**roce)
    want = {"lossless_priority": 3, "dscp": 26, "cnp_dscp": 48, "cnp_priority": 6} | roce
    rails = [r["qos"] for n in plan.doc["nodes"] for r in n["desired"]["rails"] if r["qos"]]
    assert rails and all(q == rails[0] for q in rails)
    node = rails[0]
    assert {k: node[k] for k in want} == want, "the nodes follow the spec"
    assert node["pfc_vector"] == [1 if p == want["lossless_priority"] else 0 for p in range(8)]
    host = host_qos(plan.doc)
    for key in ("trust", "pfc_priorities", "pfc_vector", "dscp", "lossless_priority", "cnp_dscp"):
        assert host[key] == node[key], key
    assert (host["cnp_priority"], host["tos"], host["ecn"]) == (
        node["cnp_priority"],
        node["tos"],
        node["ecn"],
    )
    assert host["dscp_to_priority"] == node["dscp2prio"]
    policy = roce_qos(plan.doc, "roce0")
    assert (policy.lossless_priority, policy.dscp, policy.cnp_dscp, policy.cnp_priority, policy.tos) == (
        node["lossless_priority"],
        node["dscp"],
        node["cnp_dscp"],
        node["cnp_priority"],
        node["tos"],
    )
    switch = _switch_side(plan)
    assert switch["dscp_to_priority"] == node["dscp2prio"]
    assert switch["pfc_priorities"] == switch["nvue_pfc"] == node["pfc_priorities"]
    assert switch["cnp_strict"] == [node["cnp_priority"]]


def test_renderers_follow_the_plan_not_constants() -> None:
    plan = variant(lossless_priority=4, dscp=34, cnp_dscp=46, cnp_priority=5)
    switch = roce_switches(plan)[0]
    sonic = render_sonic(plan.doc, switch)
    assert sonic["DSCP_TO_TC_MAP"]["AZURE"]["34"] == "4" and sonic["DSCP_TO_TC_MAP"]["AZURE"]["26"] == "0"
    assert sonic["DSCP_TO_TC_MAP"]["AZURE"]["46"] == "5"
    port = next(v for k, v in sonic["PORT_QOS_MAP"].items() if k != "global")
    assert port["pfc_enable"] == "4"
    nvue = render_nvue(plan.doc, switch)["set"]["qos"]
    assert set(nvue["pfc"]["default-global"]["switch-priority"]) == {"4"}
    assert nvue["egress-scheduler"]["default-global"]["traffic-class"]["5"] == {"mode": "strict"}
    assert host_qos(plan.doc)["tos"] == 34 * 4 + 2


def test_ecn_and_watchdog_switches() -> None:
    plan = variant(ecn=False)
    sonic = render_sonic(plan.doc, roce_switches(plan)[0])
    assert sonic["WRED_PROFILE"]["ROCE_LOSSLESS"]["ecn"] == "ecn_none"
    text = (
        (REPO / "inventory/clusters/lab.yaml")
        .read_text()
        .replace("ecn: true}", "ecn: true, pfc_watchdog: false}")
    )
    no_wd = build_plan(load_spec_text(text, "lab-nowd.yaml"))
    switch = roce_switches(no_wd)[0]
    sonic = render_sonic(no_wd.doc, switch)
    assert "PFC_WD" not in sonic
    assert all("pfcwd_sw_enable" not in v for v in sonic["PORT_QOS_MAP"].values())
    assert "interface" not in render_nvue(no_wd.doc, switch)["set"]


def test_wrong_switch_or_fabric_is_an_error() -> None:
    lab = plan_of("lab")
    with pytest.raises(ValueError, match="infiniband"):
        render_sonic(lab.doc, "ib0-leaf-su0-r0")
    with pytest.raises(ValueError, match="no switch 'nope'"):
        render_nvue(lab.doc, "nope")
    with pytest.raises(ValueError, match="not infiniband"):
        render_ib_qos(lab.doc, "roce0")


def test_cnp_priority_must_not_be_the_lossless_one() -> None:
    # the spec already refuses this; a hand-edited plan.json must not slip through the renderer either
    lab = plan_of("lab")
    doc = {
        **lab.doc,
        "tuning": {**lab.doc["tuning"], "roce": {**lab.doc["tuning"]["roce"], "cnp_priority": 3}},
    }
    with pytest.raises(ValueError, match="cnp_priority"):
        render_sonic(doc, roce_switches(lab)[0])


def test_infiniband_subnet_manager_policy() -> None:
    plan = plan_of("b200-ib-16su")
    files = render_ib_qos(plan.doc, "ib0")
    opts = dict(line.split(" ", 1) for line in files["opensm.conf"].splitlines() if not line.startswith("#"))
    assert opts["qos"] == "TRUE"
    q = ib_qos(plan.doc, "ib0")
    for prefix in ("qos_ca", "qos_swe"):
        sl2vl = [int(v) for v in opts[f"{prefix}_sl2vl"].split(",")]
        assert len(sl2vl) == 16 and sl2vl[q["compute_sl"]] == 0 and sl2vl[q["ipoib_sl"]] == 1
        low = dict(e.split(":") for e in opts[f"{prefix}_vlarb_low"].split(","))
        assert int(low["0"]) > int(low["1"]) > 0 and int(low["0"]) % 64 == 0
    policy = files["qos-policy.conf"]
    assert "qos-ulps" in policy and "end-qos-ulps" in policy and "name: DEFAULT" in policy
    assert f"default : {q['compute_sl']}" in policy and q["nccl_ib_sl"] == q["compute_sl"]


def test_switch_configs_cover_every_fabric_and_switch() -> None:
    lab = plan_of("lab")
    out = json.loads(json.dumps(switch_configs(lab.doc)))
    assert out["roce0"]["type"] == "roce" and out["ib0"]["type"] == "infiniband"
    assert set(out["roce0"]["switches"]) == set(roce_switches(lab))
    assert out["roce0"]["host"] == host_qos(lab.doc)
    assert set(out["ib0"]["subnet_manager"]) == {"opensm.conf", "qos-policy.conf"}
