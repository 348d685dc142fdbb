"""Rolling batches follow Ansible's `serial` and `max_fail_percentage` semantics."""

import pytest

from clusterforge.run.batches import batch_size, batches, over_fail_limit


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
