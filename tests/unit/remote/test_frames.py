"""The framing of node answers on a shared stream (a Slurm step's stdout)."""

from __future__ import annotations

import itertools
import os

import pytest

from clusterforge.remote.frames import CHUNK, MAGIC, decode, encode


def test_round_trip_of_interleaved_nodes_among_other_lines() -> None:
    a, b = os.urandom(5000), b'{"kind": "end"}\n' * 300
    la, lb = list(encode("gpu-0001", a)), list(encode("gpu-0002", b))
    assert len(la) > 1 and all(len(x) < CHUNK + 40 for x in la + lb)
    mixed = [x for pair in itertools.zip_longest(la, lb) for x in pair if x]
    mixed.insert(3, "srun: error: gpu-0003: task 2: Exited with exit code 1")
    got, bad = decode([f"{i}: {line}" if i % 2 else line for i, line in enumerate(mixed)])
    assert got == {"gpu-0001": a, "gpu-0002": b} and bad == {}


def test_a_missing_frame_is_named_never_a_partial_answer() -> None:
    lines = list(encode("n1", os.urandom(3000)))
    del lines[1]
    got, bad = decode(lines)
    assert got == {} and "1 of" in bad["n1"] and "missing" in bad["n1"]


def test_frames_that_disagree_on_their_count() -> None:
    lines = [*list(encode("n1", b"x" * 10)), f"{MAGIC} n1 0 3 AAAA"]
    got, bad = decode(lines)
    assert got == {} and "count" in bad["n1"]


def test_a_node_name_with_space_cannot_head_a_frame() -> None:
    with pytest.raises(ValueError, match="cannot head"):
        list(encode("a b", b""))


def test_garbage_in_a_frame_does_not_decode() -> None:
    got, bad = decode([f"{MAGIC} n1 0 1 QUJD"])  # base64 of "ABC": not zlib
    assert got == {} and "do not decode" in bad["n1"]
