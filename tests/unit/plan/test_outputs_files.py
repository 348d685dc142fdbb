"""write_outputs: every file, cables and BOM that add up, and an all-or-nothing swap of the output folder."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections import Counter

import pytest
import yaml

from clusterforge.plan import outputs
from clusterforge.plan.cabling import cable_sheet
from clusterforge.plan.outputs import bom_rows, cables_csv, plan_json_text, write_outputs
from clusterforge.plan.summary import summary

FILES = [
    "bom.csv",
    "cables.csv",
    "group_vars/all.yml",
    "group_vars/fabric_type_roce.yml",
    "group_vars/sku_h100_sxm_8x400g_ib.yml",
    "group_vars/sku_h100_sxm_8x400g_roce.yml",
    "hosts.yml",
    "plan.json",
    "topology.dot",
]


def _tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_writes_every_file(example, tmp_path) -> None:
    p = example("lab")
    dest = write_outputs(p, tmp_path, svg=False)
    assert dest == tmp_path / "lab"
    assert dest.stat().st_mode & 0o777 == 0o755
    assert sorted(_tree(dest)) == FILES
    assert [x.name for x in tmp_path.iterdir()] == ["lab"]  # no temporary folders left
    assert json.loads((dest / "plan.json").read_text()) == p.doc
    assert (dest / "plan.json").read_text() == plan_json_text(p)
    sku = yaml.safe_load((dest / "group_vars/sku_h100_sxm_8x400g_ib.yml").read_text())
    assert sku["clusterforge_sku_spec"] == p.doc["skus"]["h100-sxm-8x400g-ib"]


def test_cables_csv_lists_every_cable(example) -> None:
    # h100-ib-1su: 32 nodes x 8 rails = 256 node-leaf cables, 8 leaves x 32 uplinks = 256 leaf-spine cables;
    # then per node one management, one BMC and two storage cables
    rows = list(csv.DictReader(io.StringIO(cables_csv(example("h100-ib-1su")))))
    kinds = Counter(r["kind"] for r in rows)
    assert kinds == {"node-leaf": 256, "leaf-spine": 256, "node-mgmt": 32, "node-bmc": 32, "node-storage": 64}
    first = rows[0]
    assert {k: first[k] for k in list(first)[:7]} == {  # the original columns keep their meaning
        "fabric": "ib0",
        "kind": "node-leaf",
        "a_device": "gpu-0001",
        "a_port": "0",
        "b_device": "ib0-leaf-su0-r0",
        "b_port": "1",
        "speed_gbps": "400",
    }
    assert (first["cable_id"], first["a_port_name"], first["b_port_name"]) == (
        "ib0-nl-0001",
        "ibp24s0",
        "1/1/1",
    )
    ends = [(r["b_device"], r["b_port"]) for r in rows] + [
        (r["a_device"], r["a_port"]) for r in rows if r["kind"] in ("leaf-spine", "spine-core")
    ]
    assert len(set(ends)) == len(ends)  # no switch port is cabled twice


def test_bom_adds_up_to_the_summary(example) -> None:
    for name in ("lab", "b200-ib-16su"):
        p = example(name)
        s = summary(p)
        sheet = cable_sheet(p)
        bom = bom_rows(p, sheet)
        assert sum(b.quantity for b in bom if b.category == "node") == s["nodes"]
        assert sum(b.quantity for b in bom if b.category == "switch") == len(sheet.switches)
        assert sum(u.network in p.fabrics for u in sheet.switches) == sum(s["switches"].values())
    qm = [b for b in bom_rows(example("b200-ib-16su")) if b.item.startswith("QM9700")]
    assert [(b.quantity, b.part_number) for b in qm] == [(128 + 128 + 64, "MQM9700-NS2F")]


def test_failed_write_keeps_the_previous_outputs(example, tmp_path, monkeypatch) -> None:
    write_outputs(example("lab"), tmp_path, svg=False)
    before = _tree(tmp_path)

    def boom(*_args):
        raise RuntimeError("disk full")

    monkeypatch.setattr(outputs, "bom_csv", boom)
    with pytest.raises(RuntimeError):
        write_outputs(example("lab"), tmp_path, svg=False)
    assert _tree(tmp_path) == before
    assert [x.name for x in tmp_path.iterdir()] == ["lab"]


def test_rewrite_replaces_stale_files(example, tmp_path) -> None:
    dest = write_outputs(example("lab"), tmp_path, svg=False)
    (dest / "stale.txt").write_text("old")
    write_outputs(example("lab"), tmp_path, svg=False)
    assert not (dest / "stale.txt").exists()
    assert sorted(_tree(dest)) == FILES


@pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (apt install graphviz)"
)
def test_svg_is_rendered_with_graphviz(example, tmp_path) -> None:
    dest = write_outputs(example("lab"), tmp_path, svg=True)
    svg = (dest / "topology.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
