"""Shards partition the hosts: disjoint, complete, in plan order, balanced within one host."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterforge.errors import InputError
from clusterforge.run.shard import forks_for, parse_shard, select


@given(st.integers(min_value=0, max_value=300), st.integers(min_value=1, max_value=17))
def test_shards_partition_the_hosts(n_hosts, n_shards):
    hosts = [f"gpu-{i:04d}" for i in range(n_hosts)]
    parts = [select(hosts, f"{i}/{n_shards}") for i in range(1, n_shards + 1)]
    assert [h for p in parts for h in p] == hosts
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("bad", ["0/4", "5/4", "a/b", "1", "2/0", ""])
def test_bad_shard_is_bad_input(bad):
    with pytest.raises(InputError) as e:
        parse_shard(bad)
    assert "i/n" in str(e.value)


def test_no_shard_selects_everything():
    assert select(["a", "b"], None) == ["a", "b"]


def test_forks_sized_from_inventory():
    assert forks_for(1) == 5 and forks_for(16) == 16 and forks_for(1000) == 64
