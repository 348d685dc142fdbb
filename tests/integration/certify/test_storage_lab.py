"""Storage on the provisioned lab (docs/storage.md, "In the lab"): every node mounts the one JuiceFS
volume the lab host serves (a file written on one node is read on the others) and its own scratch disk
(blank, formatted by the role); a shared filesystem unmounted by hand on one node, or a scratch filled past
its floor on another, fails that node's quick tier naming the mount, and the node passes again once mended;
the full tier runs fio and the checkpoint write on both targets and reports figures."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.integration.certify.single import run_validator

pytestmark = pytest.mark.lab

GIB = 1024**3


def _run(cl: Any, node: str, *argv: str, input: str | None = None) -> str:
    r = cl.lab.exec(node, list(argv), input=input, timeout=120)
    assert r.returncode == 0, (node, argv, r.stdout[-500:], r.stderr[-500:])
    return str(r.stdout)


def _findmnt(cl: Any, node: str, target: str) -> dict[str, Any]:
    doc = json.loads(_run(cl, node, "findmnt", "-J", "-o", "SOURCE,FSTYPE,TARGET", target))
    return dict(doc["filesystems"][0])


def _storage(cl: Any) -> dict[str, Any]:
    return dict(cl.doc["nodes"][0]["desired"]["storage"])


def test_every_node_mounts_the_shared_volume_and_its_own_scratch(certify_lab: Any, tmp_path: Path) -> None:
    nodes = certify_lab.nodes
    st = _storage(certify_lab)
    shared, scratch = st["mounts"][0]["target"], st["scratch"]["target"]
    got = run_validator(certify_lab, nodes, tmp_path / "clean", "test_storage.py", tier="quick")
    for node in nodes:
        bad = {cid: (c.status, c.message) for cid, c in got[node].items() if c.status != "pass"}
        assert not bad, (node, bad)
        assert {"storage.mounts", "storage.scratch", "storage.writable", "storage.free_space"} <= set(
            got[node]
        )
    # one filesystem: what one node writes, every other node reads
    token = secrets.token_hex(8)
    path = f"{shared}/cf-lab-{token}"
    _run(certify_lab, nodes[0], "tee", path, input=token)
    try:
        for node in nodes[1:]:
            assert _run(certify_lab, node, "cat", path) == token, node
    finally:
        _run(certify_lab, nodes[0], "rm", "-f", path)
    # each node's scratch is its own disk: a different loop device per node, ext4, the by-id name resolved
    sources = {node: _findmnt(certify_lab, node, scratch) for node in nodes}
    assert all(m["fstype"] == "ext4" for m in sources.values()), sources
    assert len({m["source"] for m in sources.values()}) == len(nodes), sources
    assert all(_findmnt(certify_lab, n, shared)["fstype"] == "fuse.juicefs" for n in nodes)


def test_unmounted_shared_and_full_scratch_fail_the_quick_tier_naming_the_mount(certify_lab: Any) -> None:
    st = _storage(certify_lab)
    shared, scratch = st["mounts"][0], st["scratch"]
    unmounted, filled = certify_lab.nodes[0], certify_lab.nodes[1]
    fill = f"{scratch['target']}/cf-lab-fill"
    _run(certify_lab, unmounted, "umount", shared["target"])  # by hand, as an operator would
    avail = int(_run(certify_lab, filled, "df", "-B1", "--output=avail", scratch["target"]).split()[-1])
    _run(certify_lab, filled, "fallocate", "-l", str(avail - GIB // 2), fill)  # 0.5 GiB left, floor 1 GiB
    try:
        rc, doc = certify_lab.certify(limit=f"{unmounted},{filled}", admit=False)
    finally:
        _run(certify_lab, unmounted, "systemctl", "start", shared["unit"])
        _run(certify_lab, filled, "rm", "-f", fill)
    assert rc != 0
    checks = {n["node"]: {c["check_id"]: c for c in n["checks"]} for n in doc["nodes"]}
    down = checks[unmounted]["storage.mounts"]
    assert down["status"] == "fail" and f"not mounted at {shared['target']}" in down["message"], down
    assert shared["name"] in down["message"] and "Fix:" in down["message"]
    full = checks[filled]["storage.free_space"]
    assert full["status"] == "fail" and "scratch" in full["message"] and "floor 1 GiB" in full["message"], (
        full
    )
    assert checks[filled]["storage.mounts"]["status"] == "pass"
    for node in (unmounted, filled):
        verdict = next(n for n in doc["nodes"] if n["node"] == node)["verdict"]
        assert verdict == "fail", (node, verdict)
    # mended: mounted again, space freed: the quick tier passes again
    rc, doc = certify_lab.certify(limit=f"{unmounted},{filled}", admit=False)
    not_passing = {
        n["node"]: [c["check_id"] for c in n["checks"] if c["status"] in ("fail", "error")]
        for n in doc["nodes"]
    }
    assert rc == 0, not_passing


def test_full_tier_runs_fio_and_the_checkpoint_write_and_reports_figures(
    certify_lab: Any, tmp_path: Path
) -> None:
    node = certify_lab.nodes[-1]
    got = run_validator(
        certify_lab, [node], tmp_path / "full", "test_storage.py", tier="full", timeout_s=600
    )[node]
    perf = {cid: c for cid, c in got.items() if cid.startswith(("storage.fio", "storage.checkpoint"))}
    assert set(perf) == {
        "storage.fio[kind=seq_read]",
        "storage.fio[kind=seq_write]",
        "storage.fio[kind=randread]",
        "storage.checkpoint",
    }, sorted(got)
    st = _storage(certify_lab)
    targets = {st["mounts"][0]["target"], st["scratch"]["target"]}
    for cid, c in perf.items():
        assert c.status == "pass", (cid, c.message)
        # every attempt is reported with its figure; each target reached its floor in one of them
        passed = [a for a in c.evidence.get("attempts", []) if a["passed"]]
        assert all(a["value"] > 0 for a in passed), (cid, c.evidence)
        if cid != "storage.fio[kind=randread]":  # IOPS floor: scratch only
            assert {a["detail"]["target"] for a in passed} == targets, (cid, c.evidence)
