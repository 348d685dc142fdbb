"""The fast YAML writer reads back to exactly what it was given (PyYAML, YAML 1.1)."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterforge.plan import yamlfast

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "yes",
            "No",
            "on",
            "OFF",
            "null",
            "~",
            "1e3",
            "0x1f",
            "10.0.0.1",
            "02:cf:00:01:00:0b",
            "0000:18:00.0",
            "a: b",
            "- x",
            "#c",
            "{{ var }}",
            "",
            " lead",
            "trail ",
            "é😀",
            "line\nbreak",
            "12:30",
            "2024-01-01",
            ".inf",
            "<<",
            "=",
            "y",
            "n",
        ]
    )
)
keys = st.text(max_size=8) | st.sampled_from(["yes", "null", "1", "gpu-0001", "ansible_host"])
data = st.recursive(
    scalars, lambda kids: st.lists(kids, max_size=5) | st.dictionaries(keys, kids, max_size=5), max_leaves=25
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, data, max_size=6) | st.lists(data, max_size=6))
def test_round_trip(value) -> None:
    assert yaml.safe_load(yamlfast.dump(value)) == value


def test_style_is_block_with_one_line_per_short_mapping() -> None:
    text = yamlfast.dump({"hosts": {"a-1": None, "b-2": {"ip": "10.0.0.1", "rails": [{"i": 0, "n": "x"}]}}})
    assert text == (
        'hosts:\n  a-1: null\n  b-2:\n    ip: "10.0.0.1"\n    rails:\n      - {"i": 0, "n": "x"}\n'
    )
