"""Drain reasons from the registry (`checks.drain`): check, component, action chain, repeat offenders."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clusterforge.checks.drain import decisions, drain_reason

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_the_worst_action_names_the_reason() -> None:
    text = drain_reason("n1", ["nccl.conf", "gpu.model"], NOW)
    assert text == "clusterforge: gpu.model: service (+1 more: nccl.conf)"


def test_the_parameter_is_the_component() -> None:
    assert (
        drain_reason("n1", ["gpu.xid[gpu3]"], NOW)
        == "clusterforge: gpu.xid gpu3: drain then reset_gpu/service"
    )


def test_unknown_ids_fall_back_to_the_plain_list() -> None:
    assert drain_reason("n1", ["no.such", "other(error)"], NOW) == "clusterforge: failed no.such,other(error)"
    assert decisions("n1", ["no.such"], NOW) == []


def test_repeat_offender_escalates_with_history() -> None:
    assert drain_reason("n1", ["passive.xid.48[gpu3]"], NOW) == (
        "clusterforge: passive.xid.48 gpu3: drain then reset_gpu/service"
    )
    earlier = [(NOW - timedelta(hours=3), ["passive.xid.48[gpu3]"])]
    assert drain_reason("n1", ["passive.xid.48[gpu3]"], NOW, earlier) == (
        "clusterforge: passive.xid.48 gpu3: service +hardware ticket (2x in 1 d)"
    )
    other_gpu = [(NOW - timedelta(hours=3), ["passive.xid.48[gpu1]"])]
    assert decisions("n1", ["passive.xid.48[gpu3]"], NOW, other_gpu)[0].action == "drain"
    long_ago = [(NOW - timedelta(days=2), ["passive.xid.48[gpu3]"])]
    assert decisions("n1", ["passive.xid.48[gpu3]"], NOW, long_ago)[0].action == "drain"


def test_reason_stays_within_the_limit() -> None:
    ids = ["gpu.model"] + [f"rdma.port[rail{i}]" for i in range(40)]
    text = drain_reason("n1", ids, NOW)
    assert len(text) <= 200 and text.startswith("clusterforge: gpu.model: service (+40 more")


def test_failure_history_reads_earlier_failed_runs() -> None:
    from types import SimpleNamespace

    from clusterforge.flows.admit import failure_history

    runs = [
        SimpleNamespace(run_id="r1", recorded_at="2026-03-01T09:00:00Z", verdict="fail"),
        SimpleNamespace(run_id="r2", recorded_at="2026-03-01T10:00:00Z", verdict="pass"),
        SimpleNamespace(run_id="r3", recorded_at="2026-03-01T12:00:00Z", verdict="fail"),  # this run
    ]
    store = SimpleNamespace(
        node_history=lambda node, kind, since: runs,
        failed_checks=lambda run_id, node: {"r1": ["passive.xid.48[gpu3]"]}.get(run_id, []),
    )
    hist = failure_history(store, "n1", "r3", NOW)
    assert hist == [(datetime(2026, 3, 1, 9, 0, tzinfo=UTC), ["passive.xid.48[gpu3]"])]
    assert decisions("n1", ["passive.xid.48[gpu3]"], NOW, hist)[0].action == "service"
