"""Rolling batches follow Ansible's `serial` and `max_fail_percentage` semantics."""

import pytest

from clusterforge.pool.base import NodeState, PoolError
from clusterforge.run.batches import batch_size, batches, over_fail_limit, rollout_batches
from clusterforge.run.provision import out_of_service


@pytest.mark.parametrize(
    ("serial", "total", "size"),
    [(1, 4, 1), (2, 4, 2), ("25%", 4, 1), ("50%", 4, 2), ("10%", 4, 1), ("100%", 7, 7), (10, 4, 10)],
)
def test_batch_size(serial, total, size):
    assert batch_size(serial, total) == size


def test_batches_keep_order_and_cover_every_host_once():
    hosts = [f"n{i}" for i in range(7)]
    got = batches(hosts, 3)
    assert got == [["n0", "n1", "n2"], ["n3", "n4", "n5"], ["n6"]]
    assert [h for b in got for h in b] == hosts


@pytest.mark.parametrize(
    ("failed", "total", "limit", "abort"),
    [(0, 4, 0, False), (1, 4, 0, True), (1, 4, 25, False), (2, 4, 25, True), (4, 4, 100, False)],
)
def test_fail_limit_is_exceeding_not_reaching(failed, total, limit, abort):
    assert over_fail_limit(failed, total, limit) is abort


def test_out_of_service_nodes_converge_together_first():
    """A first provision (nodes the pool does not know) is one batch; nodes in service roll after them."""
    hosts = [f"n{i}" for i in range(6)]
    assert rollout_batches(hosts, 2, set(hosts)) == [hosts]
    assert rollout_batches(hosts, 2, set()) == [["n0", "n1"], ["n2", "n3"], ["n4", "n5"]]
    got = rollout_batches(hosts, 2, {"n1", "n4"})
    assert got == [["n1", "n4"], ["n0", "n2"], ["n3", "n5"]]
    assert sorted(h for b in got for h in b) == hosts


class _Pool:
    def __init__(self, states=None, broken=False):
        self.states, self.broken = states or {}, broken

    def drain(self, node, reason):
        return True

    def resume(self, node):
        return True

    def status(self, nodes=None):
        if self.broken:
            raise PoolError("slurmctld: connection refused")
        return {n: NodeState(n, self.states.get(n, "unknown")) for n in nodes}


def test_which_nodes_are_out_of_service():
    hosts = ["a", "b", "c", "d", "e"]
    pool = _Pool({"a": "idle", "b": "busy", "c": "draining", "d": "drained", "e": "down"})
    assert out_of_service(pool, hosts) == {"d", "e"}  # draining still runs jobs
    assert out_of_service(_Pool(), hosts) == set(hosts)  # never admitted: unknown to the pool
    assert out_of_service(None, hosts) == set()  # no pool: nothing known, everything rolls
    assert out_of_service(_Pool(broken=True), hosts) == set()  # the pool cannot say: everything rolls
