"""certify/readers.py: the small readers the validators use for host files."""

from __future__ import annotations

import pytest

from clusterforge.certify import readers
from clusterforge.hw import ParseError


def test_cpulist_is_the_hw_rule() -> None:
    assert readers.cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]  # /sys/devices/system/cpu/online
    assert readers.cpulist("0") == [0]
    for bad in ("", "0-", "a-b", "5-2"):  # 5-2: a descending range is not a CPU list (it was silently empty)
        with pytest.raises(ParseError, match="cpulist"):
            readers.cpulist(bad)
