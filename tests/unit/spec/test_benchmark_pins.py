"""software.nccl_tests / software.nvbandwidth: validated in the spec, rendered as the benchmarks role's
knobs, and the defaults agree (spec, role defaults, the lab's vendor repository; the quick-tier check's
constants are held to the role defaults in tests/unit/validators)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from clusterforge.lab.sim import repo
from clusterforge.plan import build_plan
from clusterforge.plan.inventory import all_vars
from clusterforge.spec import load_spec_text
from tests.conftest import REPO

from ._helpers import LAB, edit, only

ROLE = REPO / "playbooks" / "roles" / "benchmarks"
SOFTWARE_END = '  nic_firmware: "28.43.2026"\n'
SHA = "ab" * 32


def _with(extra: str) -> str:
    return edit(LAB, SOFTWARE_END, SOFTWARE_END + extra)


def _knobs(text: str) -> dict[str, Any]:
    return {
        k: v for k, v in all_vars(build_plan(load_spec_text(text, "t.yaml"))).items() if "benchmarks" in k
    }


def test_defaults_render_as_package_installs() -> None:
    assert _knobs(LAB) == {
        "benchmarks_cuda_version": "12.8",
        "benchmarks_nccl_version": "2.26.2",
        "benchmarks_nccl_tests_version": "2.14.1",
        "benchmarks_nccl_tests_install": "package",
        "benchmarks_nvbandwidth_version": "0.8",
        "benchmarks_nvbandwidth_install": "package",
    }


def test_artifact_source_and_site_package_reach_the_role() -> None:
    knobs = _knobs(
        _with(
            "  nccl_tests: {version: 2.15.0, install: artifact, url: 'https://repo.example/nt.tgz', "
            f"sha256: {SHA}}}\n"
            "  nvbandwidth: {version: '0.7', package: site-nvbandwidth}\n"
        )
    )
    assert knobs["benchmarks_nccl_tests_install"] == "artifact"
    assert knobs["benchmarks_nccl_tests_artifact_url"] == "https://repo.example/nt.tgz"
    assert knobs["benchmarks_nccl_tests_sha256"] == SHA
    assert knobs["benchmarks_nvbandwidth_package"] == "site-nvbandwidth"
    assert knobs["benchmarks_nvbandwidth_version"] == "0.7"
    src = _knobs(_with("  nvbandwidth: {version: '0.8', install: source}\n"))
    assert src["benchmarks_nvbandwidth_install"] == "source" and "benchmarks_nvbandwidth_sha256" not in src


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


def test_role_defaults_match_the_spec_defaults() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    sw = build_plan(load_spec_text(LAB, "t.yaml")).doc["software"]
    assert defaults["benchmarks_nccl_tests_version"] == sw["nccl_tests"]["version"]
    assert defaults["benchmarks_nvbandwidth_version"] == sw["nvbandwidth"]["version"]
    assert (
        defaults["benchmarks_nccl_tests_install"] == defaults["benchmarks_nvbandwidth_install"] == "package"
    )


def test_the_lab_repository_serves_the_default_pins_under_the_role_package_names() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    served = {(d.name, d.version) for d in repo.packages()}
    assert (
        defaults["benchmarks_nccl_tests_package"],
        defaults["benchmarks_nccl_tests_version"] + "-1",
    ) in served
    assert (
        defaults["benchmarks_nvbandwidth_package"],
        defaults["benchmarks_nvbandwidth_version"] + "-1",
    ) in served
    assert not any(name.startswith("clusterforge-sim") for name, _ in served)
    nccl_tests = next(d for d in repo.packages() if d.name == "nccl-tests")
    assert set(defaults["benchmarks_nccl_tests_binaries"]) == {p.rsplit("/", 1)[1] for p in nccl_tests.links}
