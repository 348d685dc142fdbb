"""switchcfg/sonic_readback.py: a SONiC leaf's read-back against its rendered QoS, with the real ecnconfig,
mmuconfig and pfc counter captures and states built from the render."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.errors import InputError
from clusterforge.hw import sonic_show
from clusterforge.hw.sonic_show import Block, PfcCounters, PortStatus, QueueCounters
from clusterforge.switchcfg.ports import sonic_port, switch_ports
from clusterforge.switchcfg.sonic import LOSSLESS_PROFILE, WRED, render_sonic
from clusterforge.switchcfg.sonic_readback import compare_sonic
from tests.conftest import CLUSTERS, REAL, example_plan

LEAF = "roce0-leaf-su0-r0"


def _setup() -> tuple[dict, list[str], dict]:
    doc = example_plan("h100-roce-2su").doc
    sp = switch_ports(doc, LEAF)
    return doc, [sonic_port(p, sp.model, sp.port_speed_gbps) for p in sp.ports], render_sonic(doc, LEAF)


def _as_rendered(ports: list[str], want: dict) -> dict:
    return {
        "status": [PortStatus(p, (), 400, 9100, "rs", p, "routed", "up", "up", "OSFP") for p in ports],
        "ecn": [Block("Profile", WRED, dict(want["WRED_PROFILE"][WRED]))],
        "mmu": [Block("Profile", LOSSLESS_PROFILE, {**want["BUFFER_PROFILE"][LOSSLESS_PROFILE],
                                                     "pool": "[BUFFER_POOL|ingress_lossless_pool]"})],
        "pfc": [PfcCounters(ports[0], "Tx", (0, 0, 0, 15437, 0, 0, 0, 0))],
        "queues": [QueueCounters(ports[0], "UC3", 10, 1000, 0, 0),
                   QueueCounters(ports[0], "UC1", 1, 1, 9, 9)],
    }  # fmt: skip


def test_as_rendered_passes_and_nothing_given_is_not_checked() -> None:
    doc, ports, want = _setup()
    r = compare_sonic(doc, LEAF, **_as_rendered(ports, want))
    assert r.ok and len(r.checked) == 5 and r.not_checked == []
    empty = compare_sonic(doc, LEAF)
    assert empty.ok and empty.checked == [] and len(empty.not_checked) == 5


def test_deviations_are_named() -> None:
    doc, ports, want = _setup()
    got = _as_rendered(ports, want)
    got["status"][1] = PortStatus(ports[1], (), 200, 1500, "rs", "", "", "up", "down", "")
    got["status"].pop(2)
    got["mmu"][0].fields["xoff"] = "1"
    got["mmu"][0].fields["pool"] = "[BUFFER_POOL|ingress_lossy_pool]"
    got["ecn"][0].fields["ecn"] = "ecn_none"
    del got["ecn"][0].fields["red_drop_probability"]
    got["pfc"].append(PfcCounters(ports[1], "Rx", (5, 0, 0, 0, 0, 0, 0, 0)))
    got["queues"].append(QueueCounters(ports[1], "UC3", 10, 10, 7, 700))
    r = compare_sonic(doc, LEAF, **got)
    items = {d.item: (d.expected, d.found) for d in r.deviations}
    assert items[f"{ports[1]} state"] == ("admin up, oper up", "admin down, oper up")
    assert items[f"{ports[1]} speed"] == ("400G", "200G")
    assert items[f"{ports[1]} mtu"][1] == "1500" and items[ports[2]][1].startswith("absent")
    assert items[f"BUFFER_PROFILE|{LOSSLESS_PROFILE} xoff"] == (
        want["BUFFER_PROFILE"][LOSSLESS_PROFILE]["xoff"],
        "1",
    )
    assert items[f"BUFFER_PROFILE|{LOSSLESS_PROFILE} pool"] == (
        want["BUFFER_PROFILE"][LOSSLESS_PROFILE]["pool"],
        "[BUFFER_POOL|ingress_lossy_pool]",
    )
    assert items[f"WRED_PROFILE|{WRED} ecn"] == ("ecn_all", "ecn_none")
    assert items[f"WRED_PROFILE|{WRED} red_drop_probability"] == (
        want["WRED_PROFILE"][WRED]["red_drop_probability"],
        "unset",
    )
    assert items[f"{ports[1]} PFC Rx"] == ("pause frames on priority 3 only", "priority 0: 5")
    assert items[f"{ports[1]} UC3 drops"] == ("0 on the lossless queue", "7")


def test_real_switch_with_sonic_defaults_is_not_the_plans() -> None:
    doc, _, _ = _setup()
    ecn = sonic_show.parse_profiles(next(REAL.glob("sonic-ecnconfig-l__*")).read_text(), "ecnconfig -l")
    mmu = sonic_show.parse_profiles(next(REAL.glob("sonic-mmuconfig-l__*")).read_text())
    pfc = sonic_show.parse_pfc_counters(next(REAL.glob("sonic-show-pfc-counters__*")).read_text())
    r = compare_sonic(doc, LEAF, ecn=ecn, mmu=mmu, pfc=pfc)
    items = {d.item: d.found for d in r.deviations}
    assert items[f"WRED_PROFILE|{WRED}"] == "absent (profiles: AZURE_LOSSLESS)"
    assert items[f"BUFFER_PROFILE|{LOSSLESS_PROFILE}"].startswith("absent (profiles: egress_lossless_profile")
    # its rows for planned ports (Ethernet0/4/8) show no pause; Ethernet6 (priority 3) is no planned port
    assert not any("PFC" in i for i in items)
    assert r.checked == ["ECN/WRED", "buffers", "PFC"] and len(r.not_checked) == 2


def test_cli_reads_a_folder_of_outputs(tmp_path: Path) -> None:
    spec = str(CLUSTERS / "h100-roce-2su.yaml")
    (tmp_path / "ecnconfig-l.txt").write_text(next(REAL.glob("sonic-ecnconfig-l__*")).read_text())
    (tmp_path / "mmuconfig-l.txt").write_text(next(REAL.glob("sonic-mmuconfig-l__*")).read_text())
    args = ["fabric", "switch-readback", spec, "--switch", LEAF, "--outputs", str(tmp_path)]
    res = CliRunner().invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 3, res.output
    doc = json.loads(res.output)
    assert doc["checked"] == ["ECN/WRED", "buffers"] and not doc["ok"]
    assert {d["item"] for d in doc["deviations"]} == {
        f"WRED_PROFILE|{WRED}",
        f"BUFFER_PROFILE|{LOSSLESS_PROFILE}",
    }
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = CliRunner().invoke(
        app, ["fabric", "switch-readback", spec, "--switch", LEAF, "--outputs", str(empty)]
    )
    assert bad.exit_code == 2 or isinstance(bad.exception, InputError)
