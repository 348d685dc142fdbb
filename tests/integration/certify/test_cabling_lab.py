"""Per-node cabling on the lab's real wiring: each RoCE rail's host end sits on its rail bridge, the lab's
LLDP emulator speaks for the leaf that bridge stands for, and the node's own lldpd (from the lldpd role)
hears it. Crossing two rails' links on the host is a miscabling: the quick tier fails both rails naming both
cables, and `clusterforge fabric check --collect` (the nodes' LLDP views over SSH) exits 3 naming the same
two cables as a swap; putting them back passes both again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.lab

NODE = "roce-01"


def _attach(link: str, bridge: str) -> None:
    subprocess.run(["ip", "link", "set", link, "master", bridge], check=True, timeout=30)


def _heard(certify_lab: Any, netdev: str) -> str:
    """The switch name the node's lldpd holds for `netdev` ("" when none)."""
    out = certify_lab.lab.exec(NODE, ["lldpcli", "-f", "json0", "show", "neighbors"], timeout=30)
    text = out.stdout if hasattr(out, "stdout") else str(out)
    for itf in json.loads(text or "{}").get("lldp", [{}])[0].get("interface", []):
        if itf.get("name") == netdev:
            return str(itf["chassis"][0]["name"][0]["value"])
    return ""


def _wait_heard(certify_lab: Any, netdev: str, switch: str, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while _heard(certify_lab, netdev) != switch:
        assert time.monotonic() < deadline, f"{NODE} {netdev} never heard {switch} over LLDP"
        time.sleep(1)


def _checks(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    node = next(x for x in doc["nodes"] if x["node"] == NODE)
    return {c["check_id"]: c for c in node["checks"]}


def _fabric_check(certify_lab: Any, out: Path) -> tuple[int, dict[str, Any]]:
    """`clusterforge fabric check --collect` as an operator runs it: the nodes' LLDP views over SSH."""
    cli = Path(sys.executable).parent / "clusterforge"
    argv = [
        str(cli),
        "fabric",
        "check",
        str(certify_lab.spec),
        "--collect",
        "--discovery",
        str(out.parent / "disc"),
    ]
    argv += ["--allow-unchecked", "--format", "json", "--output", str(out)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert out.exists(), f"fabric check wrote no report: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.returncode, json.loads(out.read_text())


def test_crossed_rail_cables_fail_naming_both_and_pass_once_fixed(
    certify_lab: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # records of their own: these runs (fail, then pass) must not become the node's flapping history in the
    # suite's records, which the fault rounds of test_certify_lab.py build on
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    from clusterforge.lab.labplan import load
    from clusterforge.plan.desired_fabric import rail_neighbours

    lp = load(certify_lab.inventory / "plan.json")
    node = lp.node(NODE)
    r0, r1 = node.rails[0], node.rails[1]
    planned = {int(w["rail"]): w for w in rail_neighbours(node.raw)}
    _wait_heard(certify_lab, r0.netdev, str(planned[0]["switch"]))  # as wired by the lab
    _attach(r0.host_link, r1.bridge)
    _attach(r1.host_link, r0.bridge)
    try:
        _wait_heard(certify_lab, r0.netdev, str(planned[1]["switch"]))
        _rc, doc = certify_lab.certify(limit=NODE, admit=False)
        bad = {cid: c["status"] for cid, c in _checks(doc).items() if c["status"] != "pass"}
        assert bad == {"cabling.rail_neighbour[rail0]": "fail", "cabling.rail_neighbour[rail1]": "fail"}, bad
        said = json.dumps(_checks(doc)["cabling.rail_neighbour[rail0]"])
        for w in (planned[0], planned[1]):
            assert str(w["cable_id"]) in said, (w["cable_id"], said)
        assert "swapped" in said
        # the fabric-wide check names the same two cables, as a swap
        rc, rep = _fabric_check(certify_lab, tmp_path / "crossed" / "fabric.json")
        assert rc == 3, rep
        cables = {str(planned[0]["cable_id"]), str(planned[1]["cable_id"])}
        swaps = [f for f in rep["findings"] if f["problem"] == "swapped"]
        assert [set(f["cables"]) for f in swaps] == [cables], rep["findings"]
        assert {f["problem"] for f in rep["findings"]} == {"swapped"}, rep["findings"]
    finally:
        _attach(r0.host_link, r0.bridge)
        _attach(r1.host_link, r1.bridge)
    _wait_heard(certify_lab, r0.netdev, str(planned[0]["switch"]))
    rc, doc = certify_lab.certify(limit=NODE, admit=False)
    assert rc == 0, {cid: c["status"] for cid, c in _checks(doc).items() if c["status"] != "pass"}
    rc, rep = _fabric_check(certify_lab, tmp_path / "fixed" / "fabric.json")
    assert rc == 0 and not rep["findings"], rep
