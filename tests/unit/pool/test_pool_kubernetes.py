"""Kubernetes pool manager against the local API stand-in (conftest.py): the exact patches sent."""

from __future__ import annotations

from typing import Any

import pytest
from k8s_standin import StandIn, make_node, schema_errors

from clusterforge.pool.base import HOLD_REASON, PoolError, ResumeRefused
from clusterforge.pool.kubernetes import KubernetesPool, label_value, taint_value

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DIGEST = "0123456789abcdef" * 4
CERT = {"node": "gpu-0001", "verdict": "pass", "tier": "full", "expectation_digest": DIGEST}
STRATEGIC = "application/strategic-merge-patch+json"


def _pool(k8s: StandIn, *nodes: dict[str, Any]) -> KubernetesPool:
    for n in nodes:
        k8s.nodes[n["metadata"]["name"]] = n
    return KubernetesPool(k8s.api())


def test_standin_rejects_what_the_api_server_would() -> None:
    assert schema_errors({"spec": {"unschedulable": True, "taints": [GPU_TAINT]}}, "V1Node", "node") == []
    assert schema_errors({"spec": {"unschedulabel": True}}, "V1Node", "node") == [
        "node.spec.unschedulabel: unknown field of V1NodeSpec"
    ]
    assert schema_errors(
        {"spec": {"taints": [{"key": "a", "effect": "NoSchedule", "reason": "x"}]}}, "V1Node", "node"
    ) == ["node.spec.taints[0].reason: unknown field of V1Taint"]
    assert schema_errors({"metadata": {"labels": {"a": 1}}}, "V1Node", "node") == [
        "node.metadata.labels.a: expected str, found int"
    ]
    assert schema_errors({"spec": {"unschedulable": "yes"}}, "V1Node", "node")


def test_drain_sends_one_exact_patch_and_keeps_other_taints(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("gpu-0001", taints=[GPU_TAINT]))
    assert pool.drain("gpu-0001", 'failed gpu.count,nic.link\n"quoted"')
    [patch] = k8s.patches()
    assert patch["path"] == "/api/v1/nodes/gpu-0001" and patch["content_type"] == STRATEGIC
    assert patch["body"] == {
        "metadata": {
            "resourceVersion": "100",
            "labels": {"clusterforge.io/certified": "false"},
            "annotations": {"clusterforge.io/reason": "clusterforge: failed gpu.count,nic.link quoted"},
        },
        "spec": {
            "unschedulable": True,
            "taints": [
                GPU_TAINT,
                {
                    "key": "clusterforge.io/uncertified",
                    "value": "failed-gpu.count-nic.link-quoted",
                    "effect": "NoSchedule",
                },
            ],
        },
    }
    state = pool.status(["gpu-0001"])["gpu-0001"]
    assert (state.state, state.reason, state.ours) == (
        "drained",
        "clusterforge: failed gpu.count,nic.link quoted",
        True,
    )
    assert state.labels == {"clusterforge.io/certified": "false"}
    assert k8s.nodes["gpu-0001"]["spec"]["taints"][0] == GPU_TAINT


def test_admit_uncordons_untaints_and_labels(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("gpu-0001", taints=[GPU_TAINT]))
    pool.drain("gpu-0001", "clusterforge: failed gpu.ecc")
    pool.admit("gpu-0001", CERT)
    admit = k8s.patches()[-1]
    assert admit["content_type"] == STRATEGIC
    assert admit["body"] == {
        "metadata": {
            "resourceVersion": "101",
            "annotations": {"clusterforge.io/reason": None},
            "labels": {
                "clusterforge.io/certified": "true",
                "clusterforge.io/tier": "full",
                "clusterforge.io/expectation-digest": DIGEST[:63],
            },
        },
        "spec": {"unschedulable": None, "taints": [GPU_TAINT]},
    }
    node = k8s.nodes["gpu-0001"]
    assert "unschedulable" not in node["spec"] and node["spec"]["taints"] == [GPU_TAINT]
    assert "clusterforge.io/reason" not in node["metadata"]["annotations"]
    assert node["metadata"]["labels"]["clusterforge.io/expectation-digest"] == DIGEST[:63]
    assert pool.status(["gpu-0001"])["gpu-0001"].state == "idle"


def test_resume_leaves_labels_and_sends_an_exact_patch(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("gpu-0002"))
    pool.drain("gpu-0002", "failed x")
    assert pool.resume("gpu-0002")
    assert k8s.patches()[-1]["body"] == {
        "metadata": {"resourceVersion": "101", "annotations": {"clusterforge.io/reason": None}},
        "spec": {"unschedulable": None, "taints": []},
    }
    assert k8s.nodes["gpu-0002"]["metadata"]["labels"]["clusterforge.io/certified"] == "false"
    assert pool.resume("gpu-0002") is False  # nothing to undo: no request sent
    assert len(k8s.patches()) == 2


def test_someone_elses_cordon_is_left_alone(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("gpu-0003", unschedulable=True))
    state = pool.status(["gpu-0003"])["gpu-0003"]
    assert state.state == "drained" and not state.ours
    assert pool.drain("gpu-0003", "failed x") is False
    with pytest.raises(ResumeRefused, match="drained by someone else"):
        pool.resume("gpu-0003")
    with pytest.raises(ResumeRefused):
        pool.admit("gpu-0003", {**CERT, "node": "gpu-0003"})
    assert k8s.patches() == []
    assert pool.resume("gpu-0003", force=True)
    assert "unschedulable" not in k8s.nodes["gpu-0003"]["spec"]


def test_hold_needs_force(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("gpu-0004"))
    pool.drain("gpu-0004", HOLD_REASON)
    assert k8s.patches()[-1]["body"]["spec"]["taints"][0]["value"] == "held-for-review-flapping"
    with pytest.raises(ResumeRefused, match="held for review"):
        pool.admit("gpu-0004", {**CERT, "node": "gpu-0004"})
    pool.admit("gpu-0004", {**CERT, "node": "gpu-0004"}, force=True)
    assert k8s.nodes["gpu-0004"]["metadata"]["labels"]["clusterforge.io/certified"] == "true"


def test_conflict_is_retried_on_a_fresh_read(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("gpu-0005"))
    k8s.conflicts = 1
    assert pool.drain("gpu-0005", "failed x")
    first, second = k8s.patches()
    assert first["body"]["metadata"]["resourceVersion"] == "100"
    assert second["body"]["metadata"]["resourceVersion"] == "101"  # re-read after the 409
    k8s.conflicts = 5
    with pytest.raises(PoolError, match="409"):
        pool.resume("gpu-0005")


def test_status_of_ready_down_and_missing_nodes(k8s: StandIn) -> None:
    pool = _pool(k8s, make_node("a"), make_node("b", ready=False))
    states = pool.status(["a", "b", "zz"])
    assert {n: s.state for n, s in states.items()} == {"a": "idle", "b": "down", "zz": "unknown"}
    assert set(pool.status()) == {"a", "b"}
    with pytest.raises(PoolError, match="no node zz"):
        pool.drain("zz", "x")
    with pytest.raises(PoolError, match="not 'a'"):
        pool.admit("a", CERT)


def test_label_and_taint_values_fit_the_limits() -> None:
    assert label_value("a" * 64) == "a" * 63
    assert label_value("-x y-") == "x-y"
    assert taint_value("clusterforge: failed " + "c" * 100) == ("failed-" + "c" * 100)[:63]
    assert taint_value("clusterforge: ...") == "uncertified"
