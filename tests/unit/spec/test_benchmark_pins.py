"""software.nccl_tests / software.nvbandwidth: validated in the spec, compiled into each node's desired
state (desired.software.benchmarks: what the benchmarks role installs and the quick tier checks; no role
knobs), and the lab's vendor repository serves the default pins under the default package names."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from clusterforge.lab.sim import repo
from clusterforge.plan import build_plan
from clusterforge.plan.desired_software import BENCHMARK_PACKAGES
from clusterforge.plan.inventory import all_vars
from clusterforge.spec import load_spec_text
from tests.conftest import REPO

from ._helpers import LAB, edit, only

ROLE = REPO / "playbooks" / "roles" / "benchmarks"
SOFTWARE_END = '  nic_firmware: "28.43.2026"\n'
SHA = "ab" * 32


def _with(extra: str) -> str:
    return edit(LAB, SOFTWARE_END, SOFTWARE_END + extra)


def _pins(text: str) -> dict[str, Any]:
    """Every node's desired.software.benchmarks (the same for all nodes of these specs)."""
    plan = build_plan(load_spec_text(text, "t.yaml"))
    pins = {json.dumps(n["desired"]["software"]["benchmarks"], sort_keys=True) for n in plan.nodes}
    assert len(pins) == 1, pins
    return dict(json.loads(pins.pop()))


def test_defaults_compile_as_package_installs_and_are_no_role_knobs() -> None:
    none = {"url": None, "sha256": None}
    assert _pins(LAB) == {
        "nccl_tests": {"version": "2.14.1", "install": "package", "package": "nccl-tests", **none},
        "nvbandwidth": {"version": "0.8", "install": "package", "package": "nvbandwidth", **none},
    }
    knobs = all_vars(build_plan(load_spec_text(LAB, "t.yaml")))
    assert not [k for k in knobs if k.startswith("benchmarks_")]


def test_artifact_source_and_site_package_reach_the_desired_state() -> None:
    pins = _pins(
        _with(
            "  nccl_tests: {version: 2.15.0, install: artifact, url: 'https://repo.example/nt.tgz', "
            f"sha256: {SHA}}}\n"
            "  nvbandwidth: {version: '0.7', package: site-nvbandwidth}\n"
        )
    )
    url = "https://repo.example/nt.tgz"
    assert pins["nccl_tests"] == {
        "version": "2.15.0",
        "install": "artifact",
        "package": None,
        "url": url,
        "sha256": SHA,
    }
    assert pins["nvbandwidth"] == {
        "version": "0.7",
        "install": "package",
        "package": "site-nvbandwidth",
        "url": None,
        "sha256": None,
    }
    src = _pins(_with("  nvbandwidth: {version: '0.8', install: source}\n"))["nvbandwidth"]
    assert src == {"version": "0.8", "install": "source", "package": None, "url": None, "sha256": None}


@pytest.mark.parametrize(
    ("extra", "path", "says"),
    [
        (
            "  nccl_tests: {version: 2.14.1, install: artifact, url: 'https://x/a.tgz'}\n",
            "software.nccl_tests",
            "artifact needs url and sha256",
        ),
        (
            "  nccl_tests: {version: 2.14.1, url: 'https://x/a.tgz'}\n",
            "software.nccl_tests",
            "url is only for install: artifact",
        ),
        (
            "  nvbandwidth: {version: '0.8', install: source, package: nvb}\n",
            "software.nvbandwidth",
            "package is only for install: package",
        ),
        ("  nvbandwidth: {version: v0.8}\n", "software.nvbandwidth.version", ""),
        ("  nvbandwidth: {version: '0.8', install: tarball}\n", "software.nvbandwidth.install", ""),
        (
            f"  nvbandwidth: {{version: '0.8', install: source, sha256: {SHA[:10]}}}\n",
            "software.nvbandwidth.sha256",
            "",
        ),
    ],
)
def test_bad_pins_are_rejected_with_their_path(extra: str, path: str, says: str) -> None:
    p = only(_with(extra))
    assert p.path == path, p.render()
    assert says in p.render()


def test_the_lab_repository_serves_the_default_pins_under_the_default_package_names() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    pins = _pins(LAB)
    served = {(d.name, d.version) for d in repo.packages()}
    for tool, name in BENCHMARK_PACKAGES.items():
        assert (pins[tool]["package"], pins[tool]["version"] + "-1") == (name, pins[tool]["version"] + "-1")
        assert (name, pins[tool]["version"] + "-1") in served
    assert not any(name.startswith("clusterforge-sim") for name, _ in served)
    nccl_tests = next(d for d in repo.packages() if d.name == "nccl-tests")
    assert set(defaults["benchmarks_nccl_tests_binaries"]) == {p.rsplit("/", 1)[1] for p in nccl_tests.links}
