"""`fabric check` with the switches' and the SM's recorded state in the discovery folder
(switch-state/<switch>/, sm/): built from what switchcfg renders for the plan on the real captures' layouts
(tests/switch_state.py), read back through the CLI in every format."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.errors import ExitCode, InputError
from clusterforge.fabric.check import check as cabling_check
from clusterforge.fabric.expected import expected_links
from clusterforge.fabric.formats import RENDERERS
from clusterforge.fabric.render import Wire, guid, ibnetdiscover_text, lldp_json0
from clusterforge.flows.fabric_check import check
from clusterforge.plan.build import Plan
from clusterforge.switchcfg.opensm import render_opensm, top_tier
from clusterforge.switchcfg.policy import fabric_doc, roce_qos
from clusterforge.switchcfg.recorded import OS_FILES
from tests.conftest import CLUSTERS, example_plan
from tests.switch_state import (
    OPENSM_CONF,
    nvue_applied_as_rendered,
    opensm_conf_patched,
    sonic_as_rendered,
    sonic_ports,
)

ROCE_SPEC = str(CLUSTERS / "h100-roce-2su.yaml")
IB_SPEC = str(CLUSTERS / "h100-ib-1su.yaml")
SONIC_LEAF = "roce0-leaf-su0-r0"
CUMULUS_LEAF = "roce0-leaf-su0-r1"


@pytest.fixture(scope="module")
def roce_plan() -> Plan:
    return example_plan("h100-roce-2su")


def _roce_switches(plan: Plan) -> list[str]:
    return [str(s[0]) for f in plan.doc["fabrics"] if f["type"] == "roce" for s in f["switches"]]


def _lldp(plan: Plan, folder: Path) -> None:
    """Every device's LLDP view of the plan's cables (both ends): the cabling as planned."""
    views: dict[str, list[tuple[str, str, str]]] = {}
    for e in expected_links(plan):
        views.setdefault(e.a.device, []).append((e.a.port, e.b.device, e.b.port))
        views.setdefault(e.b.device, []).append((e.b.port, e.a.device, e.a.port))
    for device, nb in views.items():
        (folder / f"{device}.json").write_text(lldp_json0(nb))


def _state(plan: Plan, folder: Path, switch: str, os: str = "sonic", **kw: Any) -> Path:
    d = folder / "switch-state" / switch
    d.mkdir(parents=True, exist_ok=True)
    if os == "sonic":
        for name, text in sonic_as_rendered(plan.doc, switch, **kw).items():
            (d / name).write_text(text)
    else:
        (d / "nv-show-applied.json").write_text(json.dumps(nvue_applied_as_rendered(plan.doc, switch)))
    return d


@pytest.fixture
def as_planned(roce_plan: Plan, tmp_path: Path) -> Path:
    """Cabling as planned, every RoCE switch's recorded state as rendered: SONiC but one Cumulus leaf."""
    _lldp(roce_plan, tmp_path)
    for sw in _roce_switches(roce_plan):
        _state(roce_plan, tmp_path, sw, "cumulus" if sw == CUMULUS_LEAF else "sonic")
    return tmp_path


def _run(folder: Path, *extra: str, spec: str = ROCE_SPEC) -> Any:
    return CliRunner().invoke(app, ["fabric", "check", spec, "--discovery", str(folder), *extra])


def _bad(res: Any) -> str:
    """The InputError (exit 2 through the CLI's main) a run ended with, as text."""
    assert isinstance(res.exception, InputError), res.output
    assert res.exception.exit_code == ExitCode.BAD_INPUT
    return str(res.exception)


def test_matching_state_is_checked_and_passes(roce_plan: Plan, as_planned: Path) -> None:
    res = _run(as_planned, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    st = {s["subject"]: s for s in doc["switch_state"]}
    assert list(st) == _roce_switches(roce_plan) and doc["deviated"] is False
    assert {s["status"] for s in st.values()} == {"ok"}
    assert st[SONIC_LEAF]["os"] == "sonic" and st[CUMULUS_LEAF]["os"] == "cumulus"
    assert st[SONIC_LEAF]["checked"] == ["interfaces", "ECN/WRED", "buffers", "PFC"]
    assert st[SONIC_LEAF]["not_checked"] == ["lossless queue drops (show queue counters)"]
    assert st[CUMULUS_LEAF]["checked"] == ["QoS", "configured ports"]
    text = _run(as_planned).output
    assert f"switch state: {len(st)} switch(es)/SM(s) of the plan, {len(st)} as planned" in text
    assert f"switch {SONIC_LEAF} (sonic, {as_planned / 'switch-state' / SONIC_LEAF}): as planned" in text


def test_a_switch_without_recorded_state_is_not_checked(roce_plan: Plan, as_planned: Path) -> None:
    shutil.rmtree(as_planned / "switch-state" / SONIC_LEAF)
    res = _run(as_planned)
    assert res.exit_code == 3, res.output
    assert (
        f"UNCHECKED no recorded state in switch-state/<switch>/ for 1 planned RoCE switch(es): {SONIC_LEAF}"
        in (res.output)
    )
    assert "STATE" not in res.output  # not a deviation: nothing was read
    res = _run(as_planned, "--allow-unchecked", "--format", "json")
    assert res.exit_code == 0, res.output
    st = {s["subject"]: s["status"] for s in json.loads(res.output)["switch_state"]}
    assert st[SONIC_LEAF] == "not checked" and st[CUMULUS_LEAF] == "ok"


def test_deviating_mtu_and_pfc_priority_in_every_format(roce_plan: Plan, as_planned: Path) -> None:
    # SONiC: every port at MTU 1500 (below the hosts' RoCE MTU); Cumulus: PFC on priority 4, not 3
    q = roce_qos(roce_plan.doc, "roce0")
    assert q.mtu > 1500 and q.lossless_tc != 4
    _state(roce_plan, as_planned, SONIC_LEAF, mtu=1500)
    tree = nvue_applied_as_rendered(roce_plan.doc, CUMULUS_LEAF)
    tree["qos"]["pfc"]["default-global"]["switch-priority"] = {"4": {}}
    (as_planned / "switch-state" / CUMULUS_LEAF / "nv-show-applied.json").write_text(json.dumps(tree))
    port = sonic_ports(roce_plan.doc, SONIC_LEAF)[0]
    mtu_item, pfc_item = f"{port} mtu", "qos pfc switch-priority"
    pfc_fix = (
        "nv set qos pfc default-global switch-priority 3; nv unset qos pfc default-global switch-priority 4"
    )

    out = {fmt: _run(as_planned, "--format", fmt) for fmt in RENDERERS}
    assert {fmt: r.exit_code for fmt, r in out.items()} == dict.fromkeys(RENDERERS, 3)
    text = out["text"].output
    assert f"STATE    {mtu_item}: expected at least {q.mtu} (the hosts' RoCE MTU); found 1500" in text
    assert f"STATE    {pfc_item}: expected 3; found 4" in text and f"fix: {pfc_fix}" in text
    assert "result: NOT AS PLANNED" in text

    doc = json.loads(out["json"].output)
    st = {s["subject"]: s for s in doc["switch_state"]}
    assert st[SONIC_LEAF]["status"] == st[CUMULUS_LEAF]["status"] == "deviations"
    mtu = [d for d in st[SONIC_LEAF]["deviations"] if d["item"] == mtu_item]
    assert mtu == [{"item": mtu_item, "expected": f"at least {q.mtu} (the hosts' RoCE MTU)", "found": "1500",
                    "fix": ""}]  # fmt: skip
    assert len(st[SONIC_LEAF]["deviations"]) == len(sonic_ports(roce_plan.doc, SONIC_LEAF))
    assert {"item": pfc_item, "expected": "3", "found": "4", "fix": pfc_fix} in st[CUMULUS_LEAF]["deviations"]
    assert doc["findings"] == [] and doc["deviated"] is True

    md = out["markdown"].output
    assert md.startswith("### ❌ fabric not as planned")
    assert (
        f"| switch {CUMULUS_LEAF} (cumulus, " in md and f"| deviates | {pfc_item} | 3 | 4 | {pfc_fix} |" in md
    )
    assert f"| deviates | {mtu_item} | at least {q.mtu} (the hosts' RoCE MTU) | 1500 |  |" in md

    suite = ET.fromstring(out["junit"].output)
    fails = {
        (c.get("classname"), c.get("name")): c.find("failure")
        for c in suite.iter("testcase")
        if c.find("failure") is not None
    }
    assert suite.get("failures") == str(len(fails)) == str(len(st[SONIC_LEAF]["deviations"]) + 1)
    pfc = fails[(f"fabric.h100-roce-2su.switch_state.{CUMULUS_LEAF}", pfc_item)]
    assert pfc.get("message") == "expected 3; found 4" and pfc_fix in (pfc.text or "")
    assert (f"fabric.h100-roce-2su.switch_state.{SONIC_LEAF}", mtu_item) in fails
    ok_cases = [c for c in suite.iter("testcase") if c.get("name") == "as planned"]
    assert len(ok_cases) == len(st) - 2


def test_values_from_the_outputs_are_escaped(roce_plan: Plan, as_planned: Path) -> None:
    d = as_planned / "switch-state" / SONIC_LEAF
    head, _, tail = (d / "mmuconfig-l.txt").read_text().rpartition("xoff ")  # the rendered profile's
    (d / "mmuconfig-l.txt").write_text(f"{head}xoff \x1b[2J{tail}")
    for fmt in RENDERERS:
        res = _run(as_planned, "--format", fmt)
        assert res.exit_code == 3 and "\x1b" not in res.output, fmt
    assert "\\x1b[2J" in _run(as_planned).output


def test_state_folder_of_an_unknown_switch_is_bad_input(as_planned: Path) -> None:
    (as_planned / "switch-state" / "leaf-nobody").mkdir()
    (as_planned / "switch-state" / "notes.txt").write_text("x")
    msg = _bad(_run(as_planned))
    assert str(as_planned / "switch-state" / "leaf-nobody") in msg and "'notes.txt' (a file)" in msg
    assert "a folder named for a planned RoCE switch (e.g. roce0-leaf-su0-r0" in msg
    assert "name the folder as the plan names the switch" in msg


def test_unreadable_or_mixed_state_is_bad_input(roce_plan: Plan, as_planned: Path) -> None:
    d = as_planned / "switch-state" / SONIC_LEAF
    (d / "nv-show-applied.json").write_text("{}")
    assert "files of both" in _bad(_run(as_planned))
    (d / "nv-show-applied.json").unlink()
    (d / "show-pfc-counters.txt").write_text("nothing like pfc counters\n")
    assert "show-pfc-counters.txt: expected the output of show-pfc-counters" in _bad(_run(as_planned))


def test_without_state_folders_the_report_is_the_cablings(roce_plan: Plan, as_planned: Path) -> None:
    shutil.rmtree(as_planned / "switch-state")
    r = check(roce_plan, as_planned)
    assert r.switch_state == [] and not r.deviated()
    plain = cabling_check(roce_plan, as_planned)
    for fmt, render in RENDERERS.items():
        if fmt != "json":
            assert render(r) == render(plain), fmt
    assert "switch state" not in RENDERERS["text"](r)


# --- the SM's files in sm/ --------------------------------------------------------------------------------


def _ib(folder: Path) -> tuple[Plan, dict[str, str]]:
    """An InfiniBand discovery as planned (ibnetdiscover.txt) and the SM files clusterforge renders with the
    GUIDs that view gives the roots."""
    plan = example_plan("h100-ib-1su")
    wires = [Wire(e.a, e.b, e.kind == "node-leaf") for e in expected_links(plan)]
    (folder / "ibnetdiscover.txt").write_text(ibnetdiscover_text(wires))
    roots = {r: f"0x{guid(r)}" for r in top_tier(fabric_doc(plan.doc, "ib0"))}
    files = render_opensm(plan.doc, "ib0", root_guids=roots)
    files["opensm.conf"] = opensm_conf_patched(OPENSM_CONF.read_text(), files["opensm.conf"])
    return plan, files


def test_sm_files_as_rendered_pass_with_the_discoverys_roots(tmp_path: Path) -> None:
    _, files = _ib(tmp_path)
    sm = tmp_path / "sm"
    sm.mkdir()
    for name, text in files.items():
        (sm / name).write_text(text)
    res = _run(tmp_path, "--format", "json", spec=IB_SPEC)
    assert res.exit_code == 0, res.output
    (st,) = json.loads(res.output)["switch_state"]
    assert (st["subject"], st["kind"], st["os"], st["status"]) == ("ib0", "sm", "opensm", "ok")
    assert st["checked"][1:] == ["partitions.conf", "qos-policy.conf", "root_guids.conf"]

    conf = files["opensm.conf"].replace("\nrouting_engine ftree,updn\n", "\nrouting_engine minhop\n")
    assert conf != files["opensm.conf"]
    (sm / "opensm.conf").write_text(conf)
    (sm / "root_guids.conf").write_text("0x0002c90300000001\n")  # a GUID of no root, the roots missing
    res = _run(tmp_path, spec=IB_SPEC)
    assert res.exit_code == 3, res.output
    assert "STATE    opensm.conf routing_engine: expected ftree,updn; found minhop" in res.output
    assert "STATE    root_guids.conf 0x0002c90300000001: expected not listed" in res.output


def test_a_standby_sm_is_judged_at_the_priority_given(tmp_path: Path) -> None:
    plan, _ = _ib(tmp_path)
    roots = {r: f"0x{guid(r)}" for r in top_tier(fabric_doc(plan.doc, "ib0"))}
    standby = render_opensm(plan.doc, "ib0", root_guids=roots, sm_priority=3)
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "opensm.conf").write_text(opensm_conf_patched(OPENSM_CONF.read_text(), standby["opensm.conf"]))
    res = _run(tmp_path, spec=IB_SPEC)
    assert res.exit_code == 3 and "opensm.conf sm_priority: expected 15; found 3" in res.output, res.output
    assert _run(tmp_path, "--sm-priority", "3", spec=IB_SPEC).exit_code == 0


def test_sm_roots_unknown_without_an_ib_view_and_bad_sm_folders(tmp_path: Path) -> None:
    plan, files = _ib(tmp_path)
    sm = tmp_path / "sm"
    sm.mkdir()
    (sm / "opensm.conf").write_text(files["opensm.conf"])
    (sm / "root_guids.conf").write_text(files["root_guids.conf"])
    (tmp_path / "ibnetdiscover.txt").unlink()
    (tmp_path / "gpu-0001.json").write_text(lldp_json0([]))  # a discovery without the InfiniBand view
    r = check(plan, tmp_path)
    (st,) = r.switch_state
    assert "root_guids.conf (no ibnetdiscover output in the discovery: the roots' GUIDs are unknown)" in (
        st.not_checked
    )
    (sm / "ib9").mkdir()
    with pytest.raises(InputError, match="both files and folders"):
        check(plan, tmp_path)
    for f in ("opensm.conf", "root_guids.conf"):
        (sm / f).unlink()
    with pytest.raises(InputError, match="a folder named for an InfiniBand fabric of the plan"):
        check(plan, tmp_path)


def test_switch_readback_names_the_files_the_shared_reader_reads() -> None:
    """The CLI's help lists them as text (importing the reader would load every parser at start-up)."""
    res = CliRunner().invoke(app, ["fabric", "switch-readback", "--help"], env={"COLUMNS": "400"})
    assert res.exit_code == 0
    for files in OS_FILES.values():
        for name in files:
            assert name in res.output
