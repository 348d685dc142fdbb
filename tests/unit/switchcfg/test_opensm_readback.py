"""switchcfg/opensm_readback.py and `clusterforge fabric sm-readback`: a running OpenSM's files against what
`render_opensm` gives the fabric, on the real default opensm.conf of Debian's opensm 3.3.23
(tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.errors import ExitCode, InputError
from clusterforge.fabric.expected import expected_links
from clusterforge.fabric.render import Wire, ibnetdiscover_text
from clusterforge.hw import ParseError, opensm_conf
from clusterforge.switchcfg.opensm import render_opensm, top_tier
from clusterforge.switchcfg.opensm_readback import compare_opensm
from tests.conftest import CLUSTERS, example_plan
from tests.switch_state import OPENSM_CONF, opensm_conf_patched

CAPTURE = OPENSM_CONF
SPEC = str(CLUSTERS / "h100-ib-1su.yaml")


def _default() -> str:
    return CAPTURE.read_text(encoding="utf-8")


def _plan_and_roots() -> tuple[dict[str, Any], dict[str, str]]:
    plan = example_plan("h100-ib-1su")
    roots = top_tier(next(f for f in plan.doc["fabrics"] if f["name"] == "ib0"))
    return plan.doc, {r: f"0x0002c9030000{i:04x}" for i, r in enumerate(roots, 1)}


def test_renderer_writes_only_options_this_opensm_knows() -> None:
    doc, roots = _plan_and_roots()
    known = set(opensm_conf.parse(_default()).options)
    rendered = opensm_conf.parse(render_opensm(doc, "ib0", root_guids=roots)["opensm.conf"]).options
    assert set(rendered) <= known


def test_capture_with_clusterforges_options_patched_in_is_as_planned() -> None:
    doc, roots = _plan_and_roots()
    want = render_opensm(doc, "ib0", root_guids=roots)
    running = {
        "opensm.conf": opensm_conf_patched(_default(), want["opensm.conf"]),
        # a tenant partition beside clusterforge's rule, other spacing and comments: not judged
        "partitions.conf": "# site\ntenant=0x0a01 : ALL=limited ;\n"
        + "Default = 0x7fff , ipoib,defmember=full:ALL=full,\n  ALL_SWITCHES=full,SELF=full; # ours\n",
        "qos-policy.conf": "# copied\n" + want["qos-policy.conf"].replace("    ", "\t"),
        "root_guids.conf": "# roots\n" + "".join(reversed(want["root_guids.conf"].splitlines(True))),
    }
    r = compare_opensm(doc, "ib0", running, root_guids=roots)
    assert r.ok, r.deviations
    assert r.checked[1:] == ["partitions.conf", "qos-policy.conf", "root_guids.conf"] and not r.not_checked
    assert r.paths == {
        "partitions.conf": "/etc/opensm/partitions.conf",
        "qos-policy.conf": "/etc/opensm/qos-policy.conf",
        "root_guids.conf": "/etc/opensm/root_guids.conf",
    }
    # the same options appended at the end instead: the last line of an option wins, as in OpenSM
    appended = {"opensm.conf": _default() + want["opensm.conf"]}
    assert compare_opensm(doc, "ib0", appended, root_guids=roots).ok


def test_raw_default_capture_deviates() -> None:
    doc, _ = _plan_and_roots()
    r = compare_opensm(doc, "ib0", {"opensm.conf": _default()})
    found = {d.item.removeprefix("opensm.conf "): (d.expected, d.found) for d in r.deviations}
    assert found["routing_engine"] == ("ftree,updn", "(null)")
    assert found["sm_priority"] == ("15", "0")
    assert found["qos"] == ("TRUE", "FALSE")
    assert found["qos_ca_sl2vl"][1] == "(null)" and found["qos_swe_high_limit"] == ("0", "-1")
    # OpenSM's defaults that are clusterforge's values too: lmc 0 and the two files' names
    assert not {"lmc", "partition_config_file", "qos_policy_file"} & set(found)
    assert r.paths["partitions.conf"] == "/etc/opensm/partitions.conf"
    assert all(d.fix.startswith("set `") for d in r.deviations)
    assert r.not_checked == [
        "partitions.conf (not given)",
        "qos-policy.conf (not given)",
        "root_guids.conf (no discovery given: the roots' GUIDs are unknown)",
    ]


def test_partitions_without_the_default_rule() -> None:
    doc, _ = _plan_and_roots()
    conf = opensm_conf_patched(_default(), render_opensm(doc, "ib0")["opensm.conf"])
    r = compare_opensm(doc, "ib0", {"opensm.conf": conf, "partitions.conf": "tenant=0x0a01 : ALL=full ;\n"})
    assert [d.item for d in r.deviations] == ["partitions.conf Default"]
    assert "limited membership" in r.deviations[0].found
    assert r.deviations[0].expected.startswith("Default=0x7fff,ipoib,defmember=full :")
    # a Default rule that is not clusterforge's: the running one is shown
    r = compare_opensm(doc, "ib0", {"opensm.conf": conf, "partitions.conf": "Default=0x7fff : ALL=full ;\n"})
    assert [(d.item, d.found) for d in r.deviations] == [
        ("partitions.conf Default", "Default=0x7fff : ALL=full ;")
    ]


def test_files_the_running_conf_does_not_read_are_not_checked() -> None:
    doc, _ = _plan_and_roots()
    want = render_opensm(doc, "ib0")
    conf = opensm_conf_patched(_default(), want["opensm.conf"])
    conf = conf.replace(
        "partition_config_file /etc/opensm/partitions.conf", "partition_config_file /etc/rdma/p.conf"
    )
    conf = conf.replace(
        "qos_policy_file /etc/opensm/qos-policy.conf", "qos_policy_file /etc/rdma/qos-policy.conf"
    )
    running = {
        "opensm.conf": conf,
        "partitions.conf": "nothing=0x1 : ALL ;\n",  # not what this SM reads: not judged
        "qos-policy.conf": want["qos-policy.conf"],
    }
    r = compare_opensm(doc, "ib0", running)
    assert [(d.item, d.found) for d in r.deviations] == [
        ("opensm.conf partition_config_file", "/etc/rdma/p.conf")
    ]
    assert "partitions.conf (the running opensm.conf does not read a file of that name)" in r.not_checked
    assert r.paths == {"qos-policy.conf": "/etc/rdma/qos-policy.conf"}  # another folder, the same file
    assert r.checked[-1] == "qos-policy.conf"
    unset = conf.replace("qos_policy_file /etc/rdma/qos-policy.conf", "qos_policy_file (null)")
    r = compare_opensm(doc, "ib0", {**running, "opensm.conf": unset})
    assert ("opensm.conf qos_policy_file", "(null)") in [(d.item, d.found) for d in r.deviations]
    assert "qos-policy.conf (the running opensm.conf does not read a file of that name)" in r.not_checked


def test_qos_policy_and_root_guids_differences() -> None:
    doc, roots = _plan_and_roots()
    want = render_opensm(doc, "ib0", root_guids=roots)
    first, *rest = roots
    running = {
        "opensm.conf": opensm_conf_patched(_default(), want["opensm.conf"]),
        "qos-policy.conf": want["qos-policy.conf"].replace("ipoib   : 1", "ipoib : 3"),
        "root_guids.conf": "".join(f"{roots[r]}\n" for r in rest) + "0x00000000deadbeef\n",
    }
    r = compare_opensm(doc, "ib0", running, root_guids=roots)
    got = [(d.item, d.expected, d.found) for d in r.deviations]
    assert ("qos-policy.conf line 10", "ipoib : 1", "ipoib : 3") in got
    assert (f"root_guids.conf {first}", f"0x{int(roots[first], 16):016x}", "absent") in got
    assert (
        "root_guids.conf 0x00000000deadbeef",
        "not listed (not a top-tier switch of the plan)",
        "listed",
    ) in got
    assert len(got) == 3


def test_standby_priority_and_bad_inputs() -> None:
    doc, _ = _plan_and_roots()
    conf = opensm_conf_patched(_default(), render_opensm(doc, "ib0", sm_priority=14)["opensm.conf"])
    assert compare_opensm(doc, "ib0", {"opensm.conf": conf}, sm_priority=14).ok
    assert [d.item for d in compare_opensm(doc, "ib0", {"opensm.conf": conf}).deviations] == [
        "opensm.conf sm_priority"
    ]
    with pytest.raises(ValueError, match=r"no opensm\.conf"):
        compare_opensm(doc, "ib0", {"partitions.conf": "x=0x1 : ALL ;"})
    with pytest.raises(ValueError, match="unknown file"):
        compare_opensm(doc, "ib0", {"opensm.conf": conf, "ib.conf": ""})
    with pytest.raises(ParseError) as exc:
        compare_opensm(doc, "ib0", {"opensm.conf": "Default=0x7fff : ALL=full ;\n"})
    assert exc.value.tool == "opensm.conf"
    with pytest.raises(ValueError, match="no subnet manager"):
        compare_opensm(example_plan("h100-roce-2su").doc, "roce0", {"opensm.conf": conf})


def test_cli_exit_codes(tmp_path: Path) -> None:
    plan = example_plan("h100-ib-1su")
    disc = tmp_path / "ibnetdiscover.txt"
    disc.write_text(ibnetdiscover_text([Wire(e.a, e.b, e.kind == "node-leaf") for e in expected_links(plan)]))
    sm = tmp_path / "sm"
    res = CliRunner().invoke(app, ["fabric", "sm-config", SPEC, "--dir", str(sm), "--discovery", str(disc)])
    assert res.exit_code == 0, res.output

    ok = CliRunner().invoke(
        app,
        ["fabric", "sm-readback", SPEC, "--outputs", str(sm), "--discovery", str(disc), "--format", "json"],
    )
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.stdout)
    assert doc["ok"] and doc["not_checked"] == [] and doc["checked"][-1] == "root_guids.conf"

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "opensm.conf").write_text(_default())
    bad = CliRunner().invoke(app, ["fabric", "sm-readback", SPEC, "--outputs", str(raw)])
    assert bad.exit_code == 3, bad.output
    assert "opensm.conf routing_engine: expected ftree,updn; found (null)" in bad.stdout
    assert "fix: set `routing_engine ftree,updn`" in bad.stdout
    assert "not checked: partitions.conf (not given)" in bad.stdout

    # the same spec without --discovery: root_guid_file is not rendered, root_guids.conf not judged
    nodisc = CliRunner().invoke(
        app, ["fabric", "sm-readback", SPEC, "--outputs", str(sm), "--format", "json"]
    )
    assert nodisc.exit_code == 0 and "root_guids.conf (no discovery given" in nodisc.stdout


@pytest.mark.parametrize("case", ["no-dir", "empty-dir", "not-opensm-conf", "no-such-fabric"])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path: Path, case: str) -> None:
    outputs = tmp_path / "sm"
    args = ["--fabric", "nope"] if case == "no-such-fabric" else []
    if case != "no-dir":
        outputs.mkdir()
    if case == "not-opensm-conf":
        (outputs / "opensm.conf").write_text("Default=0x7fff : ALL=full ;\n")
    if case == "no-such-fabric":
        (outputs / "opensm.conf").write_text(_default())
    report = tmp_path / "report.json"
    res = CliRunner().invoke(
        app, ["fabric", "sm-readback", SPEC, "--outputs", str(outputs), "--output", str(report), *args]
    )
    assert isinstance(res.exception, InputError), res.output
    assert res.exception.exit_code == ExitCode.BAD_INPUT == 2
    assert not report.exists()
    if case == "not-opensm-conf":
        assert res.exception.problems[0].file == str(outputs / "opensm.conf")
