"""Shared builders: the lab's node expectations (the lab plan and `lab_doc` are tests/conftest.py's), node
results, a private records database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.certify.results import CheckResult, NodeResult
from clusterforge.plan import Plan
from clusterforge.plan.expect import NodeExpect, nodes_of


@pytest.fixture(scope="session")
def lab_nodes(lab_plan: Plan) -> dict[str, NodeExpect]:
    return nodes_of(lab_plan.doc)


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    monkeypatch.setenv("CLUSTERFORGE_CERT_DIR", str(tmp_path / "certs"))
    monkeypatch.delenv("CLUSTERFORGE_CERT_KEY", raising=False)
    return tmp_path


PARTS = {
    "notes": {
        "parts": {
            "gpu": [
                {"index": i, "serial": f"16501240{i:05d}", "bus_id": f"0000:{i:02x}:00.0"} for i in range(8)
            ],
            "nic": [{"index": i, "hca": f"mlx5_{i}", "serial": f"a088:c203:00aa:{i:04x}"} for i in range(8)],
        },
        "tool_versions": {"nvidia_driver": "570.133.20", "nccl": "2.26.2-1+cuda12.8"},
    }
}


def node_result(
    node: str,
    statuses: dict[str, str],
    *,
    complete: bool = True,
    attempts: list[dict[str, Any]] | None = None,
) -> NodeResult:
    checks = [CheckResult(node, "inventory.parts", "pass", evidence=PARTS, tiers=["quick", "full", "burnin"])]
    for cid, status in statuses.items():
        ev: dict[str, Any] = {"commands": [{"command": "x", "rc": 0}]}
        if attempts and cid.startswith("performance"):
            ev["attempts"] = attempts
        checks.append(
            CheckResult(
                node,
                cid,
                status,
                message=f"{cid} {status}",
                expected="e",
                found="f",
                fix="run the role",
                evidence=ev,
            )
        )
    return NodeResult(node, checks, complete=complete, collected=len(checks), seconds=1.5)
