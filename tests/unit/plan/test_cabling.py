"""The physical cabling sheet: IDs, located ends, OS port names, media by distance, BOM reconciliation."""

from __future__ import annotations

import csv
import io
from math import ceil

import pytest

from clusterforge.errors import InputError
from clusterforge.plan.bom import bom_lines
from clusterforge.plan.cabling import cable_sheet, nth_netdev
from clusterforge.plan.cabling import node_rails as rails_of
from clusterforge.plan.cabling_media import GroupEnds, Leg, assign_group
from clusterforge.plan.outputs import bom_csv, cables_csv, write_outputs
from clusterforge.plan.site_layout import U_M, Loc, run_m
from clusterforge.spec import load_spec_text
from clusterforge.spec.model import Cabling
from clusterforge.spec.netcatalog import family_for, length_code, port_name

EXAMPLES = ["lab", "h100-ib-1su", "h100-roce-2su", "b200-ib-16su"]


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_sheet_and_bom_are_deterministic(plan_text, spec_text) -> None:
    a, b = plan_text(spec_text("h100-roce-2su")), plan_text(spec_text("h100-roce-2su"))
    assert a is not b
    assert cables_csv(a) == cables_csv(b)
    assert bom_csv(a) == bom_csv(b)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_cable_has_a_unique_id_and_both_ends_located(example, name) -> None:
    p = example(name)
    pol = p.spec.cluster.site.cabling
    rows = _rows(cables_csv(p))
    ids = [r["cable_id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert {r["assembly_id"] for r in rows} <= set(ids)
    for r in rows:
        for end in "ab":
            assert r[f"{end}_site"] == p.spec.cluster.site.name
            assert int(r[f"{end}_row"]) >= 1 and r[f"{end}_rack"] and r[f"{end}_port_name"]
            assert 1 <= int(r[f"{end}_u"]) <= pol.rack_units
        assert r["media"] in {"dac", "acc", "aoc", "mmf", "smf", "rj45"} and float(r["length_m"]) > 0
        assert float(r["length_m"]) >= float(r["length_estimate_m"])
        a, b = f"{r['a_rack']}U{int(r['a_u']):02d}", f"{r['b_rack']}U{int(r['b_u']):02d}"
        assert r["label"] == (
            f"{r['cable_id']} {a} {r['a_device']} {r['a_port_name']} <-> "
            f"{b} {r['b_device']} {r['b_port_name']}"
        )
    # every switch port carries one cable at most, by its OS name too
    ends = [(r["b_device"], r["b_port_name"]) for r in rows]
    ends += [(r["a_device"], r["a_port_name"]) for r in rows if r["kind"] in ("leaf-spine", "spine-core")]
    assert len(set(ends)) == len(ends)
    # every node: each rail, its management NIC and its BMC are cabled; storage NICs when declared
    kinds = {(r["a_device"], r["kind"]) for r in rows}
    for n in p.doc["nodes"]:
        assert {(n["name"], k) for k in ("node-leaf", "node-mgmt", "node-bmc", "node-storage")} <= kinds


def test_node_ends_use_the_skus_port_names(example) -> None:
    p = example("lab")
    nodes = {n["name"]: n for n in p.doc["nodes"]}
    for c in cable_sheet(p).cables:
        if c.kind == "node-leaf":
            assert c.a_port_name == nodes[c.a_device]["rails"][c.a_port]["netdev"]
            assert (c.b_device, c.b_port) == (
                nodes[c.a_device]["rails"][c.a_port]["leaf"],
                nodes[c.a_device]["rails"][c.a_port]["leaf_port"],
            )
        elif c.kind == "node-mgmt":
            assert c.a_port_name == nodes[c.a_device]["mgmt_netdev"]
        elif c.kind == "node-storage":
            assert c.a_port_name == ("stor0", "stor1")[c.a_port]
        elif c.kind == "node-bmc":
            assert c.a_port_name == "bmc" and c.media == "rj45"
    assert [nth_netdev("stor0", i) for i in range(3)] == ["stor0", "stor1", "stor2"]
    assert nth_netdev("eth", 1) == "eth1"


# SONiC names: sonic-buildimage device/mellanox/x86_64-nvidia_sn5600-r0/Mellanox-SN5600-O128/port_config.ini
# @bb73a8a1 lists Ethernet0/Ethernet4 (etp1a/etp1b) ... Ethernet252 (etp32b); MLNX-OS on Quantum-2:
# <asic>/<cage>/<port>, "1/3/1 and 1/3/2" are the two ports of cage 3.
@pytest.mark.parametrize(
    ("model", "speed", "os", "ports", "names"),
    [
        ("QM9700", 400, None, [1, 2, 3, 6, 64], ["1/1/1", "1/1/2", "1/2/1", "1/3/2", "1/32/2"]),
        ("QM9700", 400, "ibnetdiscover", [1, 64], ["1", "64"]),
        ("SN5600", 400, None, [1, 2, 3, 64], ["swp1s0", "swp1s1", "swp2s0", "swp32s1"]),
        ("SN5600", 400, "sonic", [1, 2, 3, 64], ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet252"]),
        ("SN5600", 800, None, [1, 64], ["swp1", "swp64"]),
        ("SN5600", 200, None, [1, 4, 5], ["swp1s0", "swp1s3", "swp2s0"]),
        ("SN3420", 25, None, [1, 48], ["swp1", "swp48"]),
        ("not-in-catalog", 400, None, [1, 7], ["1", "7"]),
    ],
)
def test_twin_port_names(model, speed, os, ports, names) -> None:
    assert [port_name(model, speed, p, os) for p in ports] == names


def test_sheet_names_leaf_ports_by_cage(example) -> None:
    for c in cable_sheet(example("h100-ib-1su")).cables:
        if c.kind in ("node-leaf", "leaf-spine"):
            cage, sub = divmod(c.b_port - 1, 2)
            assert (c.b_cage, c.b_port_name) == (cage + 1, f"1/{cage + 1}/{sub + 1}")


POL = Cabling()


def _leg(i: int, a: Loc, b: Loc, kind: str = "node-leaf", cage: int = 1) -> Leg:
    return Leg("ib0", kind, f"gpu-{i}", i, "ibp24s0", None, a, "leaf", i + 1, f"1/{cage}/{i + 1}", cage, b,
               400,
               f"ib0-nl-{i:04d}")  # fmt: skip


def _group(legs: list[Leg], family: str = "twin-osfp-to-2x400g-osfp") -> list:
    fam = {"twin-osfp-to-2x400g-osfp": family_for(400, "osfp-twin", "osfp", "split")}.get(family)
    fam = fam or family_for(400, "osfp-twin", "osfp-twin", "straight")
    assert fam is not None
    return [c for _, c in assign_group(GroupEnds(legs, fam, "b"), POL)]


def loc(rack: str, u: int, x: float, y: float = 0.0) -> Loc:
    return Loc("dc1", 1, rack, u, x, y)


def test_run_estimate() -> None:
    assert run_m(loc("r01", 2, 0), loc("r01", 10, 0), POL) == pytest.approx(8 * U_M + POL.slack_m)
    other = run_m(loc("r01", 2, 0), loc("r05", 48, 2.4, 2.4), POL)
    assert other == pytest.approx(46 * U_M + 2 * POL.tray_rise_m + 2.4 + 2.4 + POL.slack_m)


def test_same_rack_is_a_dac_splitter_shared_by_both_legs() -> None:
    leaf = loc("r01", 40, 0)
    cables = _group([_leg(0, loc("r01", 34, 0), leaf), _leg(1, loc("r01", 26, 0), leaf)])
    assert {c.media for c in cables} == {"dac"}
    assert {c.assembly_id for c in cables} == {"ib0-nl-0000"}  # one splitter cable, two legs
    # the longer leg (14U + slack = 1.62 m) sets the length: 2 m, the next orderable one
    assert {(c.cable_part, c.length_m) for c in cables} == {("MCP7Y00-N002", 2)}
    assert all(c.a_optic == c.b_optic == "" for c in cables)


def test_adjacent_rack_is_an_acc_splitter() -> None:
    cables = _group(
        [
            _leg(0, loc("r16", 2, 9.0), loc("nr01a", 48, 9.6)),
            _leg(1, loc("r16", 10, 9.0), loc("nr01a", 48, 9.6)),
        ]
    )
    assert {(c.media, c.cable_part, c.length_m) for c in cables} == {("acc", "MCA7J60-N005", 5)}


def test_farther_is_optics_with_a_fibre_per_leg() -> None:
    leaf = loc("nr01a", 48, 9.6)
    near, far = _leg(0, loc("r10", 2, 5.4), leaf), _leg(1, loc("r01", 2, 0.0), leaf)
    cables = _group([near, far])
    assert {c.media for c in cables} == {"mmf"}
    assert [(c.assembly_id, c.cable_part) for c in cables] == [
        ("ib0-nl-0000", "MFP7E10-N010"),  # 2.05 + 1 + 4.2 + 1 = 8.3 m -> 10 m
        ("ib0-nl-0001", "MFP7E10-N015"),  # 2.05 + 1 + 9.6 + 1 = 13.7 m -> 15 m
    ]
    assert {(c.a_optic, c.b_optic) for c in cables} == {("MMA4Z00-NS400", "MMA4Z00-NS")}  # NIC, switch cage


def test_beyond_multimode_is_single_mode_and_beyond_that_an_error() -> None:
    spine = loc("ns01", 48, 0.0, 40.0)
    [c] = _group([_leg(0, loc("nr01a", 48, 20.0), spine)], "straight")
    assert (c.media, c.cable_part, c.a_optic, c.b_optic) == (
        "smf",
        "MFP7E30-N070",
        "MMS4X00-NS",
        "MMS4X00-NS",
    )
    with pytest.raises(ValueError, match="the longest twin-osfp-straight-800g medium is 100 m"):
        _group([_leg(0, loc("nr01a", 48, 90.0), spine)], "straight")


def test_switch_to_switch_cage_pairs_share_one_800g_cable(example) -> None:
    sheet = cable_sheet(example("b200-ib-16su"))
    by_asm: dict[str, list] = {}
    for c in sheet.cables:
        if c.kind in ("leaf-spine", "spine-core"):
            by_asm.setdefault(c.assembly_id, []).append(c)
    copper = [v for v in by_asm.values() if v[0].media in ("dac", "acc")]
    assert copper and all(
        len(v) == 2 and len({(c.a_cage, c.b_device, c.b_cage) for c in v}) == 1 for v in copper
    )
    assert all(len(v) == 1 for v in by_asm.values() if v[0].media in ("mmf", "smf"))


def test_length_codes() -> None:
    assert [length_code(x) for x in (0.5, 1, 1.5, 3, 10, 100)] == ["00A", "001", "01A", "003", "010", "100"]


def _expected_bom(rows: list[dict[str, str]]) -> dict[tuple[str, str], int]:
    """Recount the BOM's cable and transceiver lines from cables.csv alone."""
    assemblies: dict[tuple[str, str], set[str]] = {}
    optics: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for r in rows:
        key = ("cable", f"{r['cable_part']}|{r['cable_type']}|{r['length_m']}")
        assemblies.setdefault(key, set()).add(r["assembly_id"])
        for end in "ab":
            if r[f"{end}_optic"]:
                where = f"cage{r[f'{end}_cage']}" if r[f"{end}_cage"] else r[f"{end}_port_name"]
                optics.setdefault(("transceiver", r[f"{end}_optic"]), set()).add((r[f"{end}_device"], where))
    return {k: len(v) for k, v in (assemblies | optics).items()}


@pytest.mark.parametrize("name", ["lab", "b200-ib-16su"])
def test_bom_reconciles_with_cables_csv(example, name) -> None:
    p = example(name)
    rows = _rows(cables_csv(p))
    bom = _rows(bom_csv(p))
    got = {}
    for b in bom:
        if b["category"] == "cable":
            kind = b["item"].rsplit(", ", 1)[0]
            got[("cable", f"{b['part_number']}|{kind}|{b['length_m']}")] = int(b["quantity"])
        elif b["category"] == "transceiver":
            got[("transceiver", b["part_number"])] = int(b["quantity"])
        q, s = int(b["quantity"]), int(b["spares"])
        assert int(b["order_quantity"]) == q + s
        if b["category"] in ("cable", "transceiver"):
            assert s == max(ceil(q * 5 / 100), 1)  # the default policy: 5 %, at least one
    assert got == _expected_bom(rows)
    assert {b["category"] for b in bom} == {"node", "switch", "cable", "transceiver"}


def test_spares_policy_comes_from_the_spec(plan_text, spec_text, edit) -> None:
    text = edit(
        spec_text("lab"),
        "    power_kw: 45\n",
        "    power_kw: 45\n  cabling: {spares: {percent: 10, minimum: 0, switches_percent: 50}}\n",
    )
    p = plan_text(text)
    lines = bom_lines(p, cable_sheet(p))
    for b in lines:
        if b.category in ("cable", "transceiver"):
            assert b.spares == ceil(b.quantity * 0.10)
        elif b.category == "switch":
            assert b.spares == ceil(b.quantity * 0.5)
    assert any(b.spares for b in lines)


def test_node_rails_give_each_rails_expected_cable(example) -> None:
    p = example("lab")
    sheet = cable_sheet(p)
    by_id = {c.cable_id: c for c in sheet.cables}
    for n in p.doc["nodes"]:
        got = rails_of(p, n["name"], sheet)
        assert [r.rail for r in got] == [r["index"] for r in n["rails"]]
        for r, want in zip(got, n["rails"], strict=True):
            assert (r.hca, r.node_port, r.switch, r.switch_port) == (
                want["hca"], want["netdev"], want["leaf"], want["leaf_port"],
            )  # fmt: skip
            c = by_id[r.cable_id]
            assert (c.a_device, c.a_port, c.b_port_name, c.a, c.b) == (
                n["name"], r.rail, r.switch_port_name, r.node_location, r.switch_location,
            )  # fmt: skip
            assert r.node_location.rack == n["rack"]
    with pytest.raises(KeyError):
        sheet.node_rails("no-such-node")


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        (
            "    power_kw: 45\n",
            "    power_kw: 45\n  cabling: {management_switch: XYZ}\n",
            "site.cabling.management_switch",
        ),
        (
            "    power_kw: 45\n",
            "    power_kw: 45\n  cabling: {bmc_switch: SN5600}\n",
            "site.cabling.bmc_switch",
        ),
        (
            "    power_kw: 45\n",
            "    power_kw: 45\n  cabling: {node_height_u: 12}\n",
            "site.cabling.rack_units",
        ),
    ],
)
def test_cabling_policy_errors(spec_text, edit, old, new, path) -> None:
    with pytest.raises(InputError) as info:
        load_spec_text(edit(spec_text("lab"), old, new), "test.yaml")
    assert [p.path for p in info.value.problems] == [path]


def test_a_run_no_medium_reaches_is_an_input_error(plan_text, spec_text, edit, tmp_path) -> None:
    text = spec_text("h100-ib-1su").replace(
        "power_kw: 45}", "power_kw: 45}\n  cabling: {racks_per_row: 1, row_pitch_m: 20}"
    )
    p = plan_text(text)
    with pytest.raises(InputError) as info:
        write_outputs(p, tmp_path, svg=False)
    assert info.value.exit_code == 2 and "the first 5 of" in str(info.value)
    [first, *_] = info.value.problems
    assert (
        first.path == "site.cabling" and "the longest twin-osfp-to-2x400g-osfp medium is 100 m" in first.found
    )
    assert list(tmp_path.iterdir()) == []  # nothing written
