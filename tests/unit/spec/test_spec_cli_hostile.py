"""Issue 16 through the real CLI: hostile spec files and arguments exit 2 with one clear error, in seconds,
in bounded memory (RLIMIT_AS), without a traceback, without raw control characters or rich markup in
the output, and without writing anything."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterforge.spec.yamlsrc import MAX_SPEC_BYTES

from ._helpers import CLUSTERS, LAB_SPEC
from .test_spec_hostile import BOMB

MAIN = "import sys; from clusterforge.cli import main; sys.argv = ['clusterforge', *sys.argv[1:]]; main()"
MEMORY_LIMIT = 512 * 1024 * 1024  # address space of the whole CLI process; the bomb took > 5 GB


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def plan(
    spec: Path | str, tmp_path: Path, *extra: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("CLUSTERFORGE_DEBUG", None)
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", MAIN, "plan", str(spec), "--out", str(tmp_path / "out"), "--no-svg", *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )
    assert time.perf_counter() - t0 < timeout
    return r


def assert_refused(r: subprocess.CompletedProcess[str], tmp_path: Path, *needles: str) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out and "clusterforge failed" not in out
    assert "\x1b" not in out and "\r" not in out
    for n in needles:
        assert n in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_the_lab_spec_plans_within_the_memory_limit(tmp_path: Path) -> None:
    r = plan(CLUSTERS / "lab.yaml", tmp_path, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "lab" / "plan.json").is_file()


def test_alias_bomb(tmp_path: Path) -> None:
    f = tmp_path / "bomb.yaml"
    f.write_text(BOMB)
    assert f.stat().st_size == 342
    assert_refused(plan(f, tmp_path, timeout=15), tmp_path, "alias", "bomb.yaml:")


def test_self_referencing_alias(tmp_path: Path) -> None:
    f = tmp_path / "self.yaml"
    f.write_text("a: &a [*a]\n")
    assert_refused(plan(f, tmp_path), tmp_path, "recursive alias")


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    assert_refused(plan(fifo, tmp_path, timeout=15), tmp_path, "a FIFO (named pipe)")


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), (".", "a folder")])
def test_not_a_regular_file(path: str, kind: str, tmp_path: Path) -> None:
    assert_refused(plan(path, tmp_path, timeout=15), tmp_path, kind, "expected a regular file")


def test_oversized_spec(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text(LAB_SPEC + "#" * MAX_SPEC_BYTES + "\n")
    assert_refused(plan(f, tmp_path), tmp_path, f"at most {MAX_SPEC_BYTES} bytes")


def test_out_pointing_at_a_file(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("keep me\n")
    r = plan(CLUSTERS / "lab.yaml", tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--out" in r.stderr and "is not a folder" in r.stderr
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_markup_and_control_characters_print_literally(tmp_path: Path) -> None:
    f = tmp_path / "ansi.yaml"
    key = '"[/x][bold red]\\e[31m\\rforged\\u202e": 1\n'
    f.write_text(LAB_SPEC.replace("apiVersion:", key + "apiVersion:", 1))
    r = plan(f, tmp_path)
    assert_refused(r, tmp_path, "unknown key '[/x][bold red]\\x1b[31m\\rforged\\u202e'")
    assert "\u202e" not in r.stderr


def test_naming_with_index_attribute(tmp_path: Path) -> None:
    f = tmp_path / "idx.yaml"
    f.write_text(LAB_SPEC.replace('"roce-{index:02d}"', '"roce-{index[0]}"'))
    assert_refused(plan(f, tmp_path), tmp_path, "pools[0].naming", "{index}")
