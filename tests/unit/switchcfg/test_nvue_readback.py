"""switchcfg/nvue_readback.py: a Cumulus leaf's read-back against its rendered NVUE QoS, with the real NVUE
captures and trees built from the render (no real capture of a RoCE-configured Cumulus switch was found)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.errors import InputError
from clusterforge.hw import nvue_show
from clusterforge.switchcfg.nvue_readback import compare_nvue
from clusterforge.switchcfg.ports import cumulus_port, switch_ports
from tests.conftest import CLUSTERS, example_plan
from tests.switch_state import NVUE_APPLIED, NVUE_IFACES, nvue_applied_as_rendered

LEAF = "roce0-leaf-su0-r0"
APPLIED, IFACES = NVUE_APPLIED, NVUE_IFACES


def _setup() -> tuple[dict[str, Any], list[str], int]:
    doc = example_plan("h100-roce-2su").doc
    sp = switch_ports(doc, LEAF)
    return doc, [cumulus_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports], sp.port_speed_gbps


def _ops(ports: list[str], gbps: int) -> list[nvue_show.NvLink]:
    return [nvue_show.NvLink(p, "swp", 9216, f"{gbps}G", gbps, "up") for p in ports]


def test_as_rendered_passes_and_nothing_given_is_not_checked() -> None:
    doc, ports, gbps = _setup()
    applied = nvue_show.parse_applied(json.dumps(nvue_applied_as_rendered(doc, LEAF)))
    r = compare_nvue(doc, LEAF, applied=applied, interfaces=_ops(ports, gbps))
    assert r.ok, r.deviations
    assert r.checked == ["QoS", "configured ports", "ports"] and r.not_checked == []
    empty = compare_nvue(doc, LEAF)
    assert empty.ok and empty.checked == [] and len(empty.not_checked) == 2


def test_real_vx_defaults_are_not_a_roce_plan() -> None:
    """The real capture holds NVUE's default QoS. No plan can match it (the render always sets RoCE on,
    trust l3, a DSCP map and PFC), so every RoCE item deviates; the identity switch-priority -> traffic-class
    map it shares with the render does not."""
    doc, _, _ = _setup()
    r = compare_nvue(doc, LEAF, applied=nvue_show.parse_applied(APPLIED.read_text()))
    items = {d.item: (d.expected, d.found) for d in r.deviations}
    assert items["qos roce enable"] == ("on", "off")
    assert items["qos mapping trust"] == ("l3", "l2")
    assert items["qos mapping dscp 26"] == ("3", "unset")
    assert items["qos pfc switch-priority"] == ("3", "none")
    assert items["qos congestion-control tc 3 min-threshold"] == ("150000", "unset")
    assert items["qos egress-scheduler tc 3 bw-percent"] == ("50", "13")
    # the identity switch-priority -> traffic-class map of the capture is what the render wants
    assert not any(i.startswith("qos egress-queue-mapping") for i in items)
    assert r.checked == ["QoS", "configured ports"] and r.not_checked == ["ports (nv show interface -o json)"]


def test_deviations_are_named_with_the_fix() -> None:
    doc, ports, gbps = _setup()
    tree = nvue_applied_as_rendered(doc, LEAF)
    m = tree["qos"]["mapping"]["default-global"]["dscp"]
    m["26"] = {"switch-priority": 4}  # another DSCP map
    tree["qos"]["pfc"]["default-global"]["switch-priority"] = {"4": {}}  # PFC on another priority
    tree["interface"][ports[0]]["link"]["mtu"] = 1500  # smaller MTU
    del tree["interface"][ports[1]]
    ops = _ops(ports, gbps)
    ops[2] = nvue_show.NvLink(ports[2], "swp", 1500, "200G", 200, "down")
    ops.pop(3)
    r = compare_nvue(doc, LEAF, applied=nvue_show.parse_applied(json.dumps(tree)), interfaces=ops)
    items = {d.item: (d.expected, d.found, d.fix) for d in r.deviations}
    assert items["qos mapping dscp 26"] == (
        "3",
        "4",
        "nv set qos mapping default-global dscp 26 switch-priority 3",
    )
    assert items["qos pfc switch-priority"] == (
        "3",
        "4",
        "nv set qos pfc default-global switch-priority 3; nv unset qos pfc default-global switch-priority 4",
    )
    assert items[f"{ports[0]} mtu (applied)"][1] == "1500"
    assert items[f"{ports[1]} (applied)"][1] == "absent from the applied configuration"
    assert items[f"{ports[2]} state"][:2] == ("up", "down")
    assert items[f"{ports[2]} speed"][:2] == (f"{gbps}G", "200G")
    assert items[f"{ports[2]} mtu"][1] == "1500"
    assert items[ports[3]][1] == "absent from `nv show interface`"
    assert len(r.deviations) == 8


def test_real_switch_without_cables_is_not_up() -> None:
    """The real operational capture names swp1/swp10; a plan switch with catalog-unknown ports uses those."""
    doc, _, _ = _setup()
    links = nvue_show.interfaces_from(ast.literal_eval(IFACES.read_text()))
    r = compare_nvue(doc, LEAF, interfaces=links)
    # the plan's leaf has split ports (swp1s0, ...); the capture's swp1/swp10 are not among them
    assert all(d.found == "absent from `nv show interface`" for d in r.deviations) and r.deviations


def _cli(spec: str, folder: Path, *extra: str) -> Any:
    args = ["fabric", "switch-readback", spec, "--switch", LEAF, "--outputs", str(folder), "--os", "cumulus"]
    return CliRunner().invoke(app, [*args, *extra])


def test_cli_exit_codes(tmp_path: Path) -> None:
    spec = str(CLUSTERS / "h100-roce-2su.yaml")
    doc, _, _ = _setup()
    ok = tmp_path / "ok"
    ok.mkdir()
    (ok / "nv-show-applied.json").write_text(json.dumps(nvue_applied_as_rendered(doc, LEAF)))
    res = _cli(spec, ok, "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["not_checked"] == ["ports (nv show interface -o json)"]

    real = tmp_path / "real"
    real.mkdir()
    (real / "nv-show-applied.json").write_text(APPLIED.read_text())
    res = _cli(spec, real, "--format", "json")
    assert res.exit_code == 3, res.output
    assert "qos roce enable" in {d["item"] for d in json.loads(res.output)["deviations"]}

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "nv-show-applied.json").write_text('{"qos": {"roce": ')
    out = tmp_path / "report.json"
    res = _cli(spec, bad, "--output", str(out))
    assert res.exit_code == 2 or isinstance(res.exception, InputError)
    assert not out.exists()
    msg = res.output + str(res.exception)
    assert "nv-show-applied.json" in msg and "nv show --applied -o json" in msg and "found none" not in msg

    empty = tmp_path / "empty"
    empty.mkdir()
    for res in (_cli(spec, empty), _cli(spec, ok, "--os", "junos")):
        assert res.exit_code == 2 or isinstance(res.exception, InputError)
