"""The benchmarks role: package specs at the pins per OS family, the source build's commands and
dependencies, and real runs on localhost of what the lab cannot run (artifact and source installs).

The artifact method runs for real into a temporary prefix (root only: the role manages root-owned files),
from file:// tarballs: links into a temporary bin directory, idempotent, a version change moves the links.
The source method runs in check mode (a build needs the CUDA toolkit): every step is planned, nothing is
written.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from ._support import PLAYBOOKS, Result, Runner, task_results
from .test_templates import ROCKY, UBUNTU, _desired_with, render

NCCL_BINARIES = ["all_reduce_perf", "sendrecv_perf"]  # two of them keep the runs short


def _pins(**tools: dict[str, Any]) -> dict[str, Any]:
    """`clusterforge_desired` (the fixture SKU's) with the given tools' pins changed: the role's only source
    of versions, install methods, package names, artifact URLs and checksums."""
    desired = _desired_with()
    bench = desired["software"]["benchmarks"]
    for tool, change in tools.items():
        bench[tool] = {**bench[tool], **change}
    return {"clusterforge_desired": desired}


def test_package_specs_pin_the_versions_per_family() -> None:
    expr = {"specs": "{{ _benchmarks_package_specs }}"}
    assert render("benchmarks", expressions=expr)["specs"] == ["nccl-tests=2.14.1*", "nvbandwidth=0.8*"]
    assert render("benchmarks", family="RedHat", facts=ROCKY, expressions=expr)["specs"] == [
        "nccl-tests-2.14.1",
        "nvbandwidth-0.8",
    ]


def test_only_package_tools_are_installed_as_packages() -> None:
    out = render(
        "benchmarks",
        variables=_pins(nvbandwidth={"install": "source", "package": None}),
        expressions={"specs": "{{ _benchmarks_package_specs }}", "links": "{{ _benchmarks_links }}"},
    )
    assert out["specs"] == ["nccl-tests=2.14.1*"]
    assert out["links"] == [
        {"name": "nvbandwidth", "target": "/opt/clusterforge/benchmarks/nvbandwidth-0.8/bin/nvbandwidth"}
    ]


def test_site_package_names_come_from_the_desired_state() -> None:
    out = render(
        "benchmarks",
        facts=UBUNTU,
        variables=_pins(nccl_tests={"package": "acme-nccl-tests"}),
        expressions={"specs": "{{ _benchmarks_package_specs }}"},
    )
    assert out["specs"] == ["acme-nccl-tests=2.14.1*", "nvbandwidth=0.8*"]


@pytest.mark.parametrize(
    ("family", "facts", "mpi", "deps"),
    [
        (
            "Debian",
            UBUNTU,
            "/usr/lib/x86_64-linux-gnu/openmpi",
            ["libnccl-dev=2.26.2-1+cuda12.8", "cuda-toolkit-12-8", "libboost-program-options-dev"],
        ),
        (
            "Debian",
            {**UBUNTU, "architecture": "aarch64"},  # Debian multiarch on an arm64 server (GB200 tray)
            "/usr/lib/aarch64-linux-gnu/openmpi",
            ["libnccl-dev=2.26.2-1+cuda12.8", "cuda-toolkit-12-8", "libboost-program-options-dev"],
        ),
        (
            "RedHat",
            ROCKY,
            "/usr/lib64/openmpi",
            ["libnccl-devel-2.26.2-1+cuda12.8", "cuda-toolkit-12-8", "boost-static", "openmpi-devel"],
        ),
    ],
)
def test_source_build_dependencies_per_family(
    family: str, facts: dict[str, Any], mpi: str, deps: list[str]
) -> None:
    out = render(
        "benchmarks",
        family=family,
        facts=facts,
        expressions={
            "deps": "{{ _benchmarks_build_packages }}",
            "mpi": "{{ _benchmarks_mpi_home }}",
            "env": "{{ _benchmarks_build_env }}",
        },
    )
    assert set(deps) <= set(out["deps"]), out["deps"]
    assert out["mpi"] == mpi
    assert out["env"]["PATH"].startswith("/usr/local/cuda-12.8/bin:")
    assert out["env"]["LIBRARY_PATH"] == "/usr/local/cuda-12.8/lib64/stubs"


def test_source_urls_are_the_pinned_upstream_tags() -> None:
    out = render(
        "benchmarks",
        expressions={
            "nccl": "{{ benchmarks_nccl_tests_source_url }}",
            "nvb": "{{ benchmarks_nvbandwidth_source_url }}",
        },
    )
    assert out["nccl"] == "https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v2.14.1.tar.gz"
    assert out["nvb"] == "https://github.com/NVIDIA/nvbandwidth/archive/refs/tags/v0.8.tar.gz"


# ---- runs on localhost -------------------------------------------------------------------------------


def _tarball(path: Path, files: dict[str, str]) -> str:
    """A .tar.gz holding executable scripts; returns its sha256."""
    src = path.with_suffix(".d")
    for rel, text in files.items():
        f = src / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        f.chmod(0o755)
    with tarfile.open(path, "w:gz") as tar:
        for rel in files:
            tar.add(src / rel, arcname=rel)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(run_ansible: Runner, tmp_path: Path, knobs: dict[str, Any], check: bool = False) -> Result:
    playbook = tmp_path / "benchmarks.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "benchmarks alone",
                    "hosts": "localhost",
                    "gather_facts": False,  # the OS family and architecture come with the knobs (faster)
                    "roles": ["benchmarks"],
                }
            ]
        )
    )
    extra = tmp_path / "knobs.yml"
    facts = {"ansible_os_family": "Debian", "ansible_architecture": "x86_64"}
    extra.write_text(yaml.safe_dump({**facts, **knobs}))
    return run_ansible(
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        *(["--check"] if check else []),
        "-e",
        f"@{extra}",
        str(playbook),
        env={"ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles")},
        json_output=True,
    )


def _changed(res: Result) -> list[str]:
    return [name for name, _, r in task_results(res.json()) if r.get("changed")]


@pytest.fixture
def artifacts(tmp_path: Path) -> dict[str, Any]:
    """Two nccl-tests versions and one nvbandwidth, each a tarball with one top directory to strip."""
    out: dict[str, Any] = {"prefix": tmp_path / "opt", "bin": tmp_path / "bin"}
    out["bin"].mkdir()
    for version in ("2.14.1", "2.15.0"):
        tgz = tmp_path / f"nccl-tests-{version}.tar.gz"
        files = {f"nccl-tests/bin/{b}": f"#!/bin/sh\necho {b} {version}\n" for b in NCCL_BINARIES}
        out[f"nccl-{version}"] = (tgz.as_uri(), _tarball(tgz, files))
    tgz = tmp_path / "nvbandwidth-0.8.tar.gz"
    out["nvb"] = (tgz.as_uri(), _tarball(tgz, {"nvb/bin/nvbandwidth": "#!/bin/sh\necho nvbandwidth v0.8\n"}))
    return out


def _artifact(url: str, sha: str, **more: str) -> dict[str, Any]:
    return {"install": "artifact", "package": None, "url": url, "sha256": sha, **more}


def _artifact_knobs(a: dict[str, Any], nccl_version: str, nccl_sha: str | None = None) -> dict[str, Any]:
    url, sha = a[f"nccl-{nccl_version}"]
    nvb_url, nvb_sha = a["nvb"]
    return {
        "benchmarks_prefix": str(a["prefix"]),
        "benchmarks_bin_dir": str(a["bin"]),
        "benchmarks_artifact_strip_components": 1,
        "benchmarks_nccl_tests_binaries": NCCL_BINARIES,
        **_pins(
            nccl_tests=_artifact(url, nccl_sha or sha, version=nccl_version),
            nvbandwidth=_artifact(nvb_url, nvb_sha),
        ),
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="the role manages root-owned files")
def test_artifact_install_links_idempotent_and_moves_with_the_version(
    run_ansible: Runner, tmp_path: Path, artifacts: dict[str, Any]
) -> None:
    prefix, bindir = artifacts["prefix"], artifacts["bin"]
    knobs = _artifact_knobs(artifacts, "2.14.1")
    dry = _run(run_ansible, tmp_path, knobs, check=True)
    assert dry.rc == 0, dry.output[-4000:]
    assert not prefix.exists() and not any(bindir.iterdir())  # check mode wrote nothing

    first = _run(run_ansible, tmp_path, knobs)
    assert first.rc == 0, first.output[-4000:]
    link = bindir / "all_reduce_perf"
    assert link.is_symlink()
    assert os.readlink(link) == f"{prefix}/nccl-tests-2.14.1/bin/all_reduce_perf"
    assert sorted(p.name for p in bindir.iterdir()) == sorted([*NCCL_BINARIES, "nvbandwidth"])
    assert os.readlink(bindir / "nvbandwidth") == f"{prefix}/nvbandwidth-0.8/bin/nvbandwidth"

    again = _run(run_ansible, tmp_path, knobs)
    assert again.rc == 0 and _changed(again) == [], _changed(again)
    check = _run(run_ansible, tmp_path, knobs, check=True)
    assert check.rc == 0 and _changed(check) == [], _changed(check)

    bumped = _run(run_ansible, tmp_path, _artifact_knobs(artifacts, "2.15.0"))
    assert bumped.rc == 0, bumped.output[-4000:]
    assert os.readlink(link) == f"{prefix}/nccl-tests-2.15.0/bin/all_reduce_perf"
    assert f"benchmarks : Link the binaries into {bindir}" in _changed(bumped)


def test_artifact_with_a_wrong_checksum_fails_before_anything_is_linked(
    run_ansible: Runner, tmp_path: Path, artifacts: dict[str, Any]
) -> None:
    knobs = _artifact_knobs(artifacts, "2.14.1", nccl_sha="0" * 64)
    res = _run(run_ansible, tmp_path, knobs)
    assert res.rc != 0
    failed = [name for name, _, r in task_results(res.json()) if r.get("failed")]
    assert failed == ["benchmarks : Download the artifact of nccl-tests 2.14.1"], failed
    assert not any(artifacts["bin"].iterdir())


def test_artifact_without_a_checksum_is_refused(run_ansible: Runner, tmp_path: Path) -> None:
    res = _run(
        run_ansible,
        tmp_path,
        _pins(nvbandwidth={"install": "artifact", "package": None, "url": "https://x/a.tgz"}),
        check=True,
    )
    assert res.rc != 0
    failed = [(n, r) for n, _, r in task_results(res.json()) if r.get("failed")]
    assert [n for n, _ in failed] == ["benchmarks : Check knob combinations"], failed
    assert "an artifact needs an http(s) or file URL and a sha256" in failed[0][1]["msg"]


def test_source_build_in_check_mode_plans_every_step_and_writes_nothing(
    run_ansible: Runner, tmp_path: Path
) -> None:
    nccl = tmp_path / "nccl-tests-2.14.1.tar.gz"
    nccl_sha = _tarball(nccl, {"nccl-tests-2.14.1/Makefile": "build:\n"})
    nvb = tmp_path / "nvbandwidth-0.8.tar.gz"
    _tarball(nvb, {"nvbandwidth-0.8/CMakeLists.txt": "project(nvbandwidth)\n"})
    prefix, bindir = tmp_path / "opt", tmp_path / "bin"
    res = _run(
        run_ansible,
        tmp_path,
        {
            "benchmarks_prefix": str(prefix),
            "benchmarks_bin_dir": str(bindir),
            "benchmarks_build_packages_install": False,
            "benchmarks_cuda_architectures": ["90"],
            "benchmarks_nccl_tests_source_url": nccl.as_uri(),
            "benchmarks_nvbandwidth_source_url": nvb.as_uri(),
            **_pins(
                nccl_tests={"install": "source", "package": None, "sha256": nccl_sha},
                nvbandwidth={"install": "source", "package": None},
            ),
        },
        check=True,
    )
    assert res.rc == 0, res.output[-4000:]
    results = {name.removeprefix("benchmarks : "): r for name, _, r in task_results(res.json())}
    for step in (
        "Source directory of nccl-tests 2.14.1",
        "Build (MPI=1) nccl-tests 2.14.1",
        "Source directory of nvbandwidth 0.8",
        "Configure the build of nvbandwidth 0.8",
        "Build nvbandwidth 0.8",
    ):
        assert results[step].get("changed"), (step, results[step])
    for step in (  # nothing to download into, unpack or copy before the real run
        "Download the upstream release nccl-tests v2.14.1",
        "Unpack the upstream release nccl-tests v2.14.1",
        "Copy the built binaries of nccl-tests 2.14.1",
        "Download the upstream release nvbandwidth v0.8",
    ):
        assert results[step].get("skipped"), (step, results[step])
    make = results["Build (MPI=1) nccl-tests 2.14.1"]["cmd"]
    assert make[:4] == ["timeout", "3600", "make", "-C"]
    assert "MPI=1" in make and "CUDA_HOME=/usr/local/cuda-12.8" in make and "NCCL_HOME=/usr" in make
    assert "NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90" in make
    cmake = results["Configure the build of nvbandwidth 0.8"]["cmd"]
    assert "-DCMAKE_CUDA_ARCHITECTURES=90" in cmake
    assert "-DCMAKE_CUDA_COMPILER=/usr/local/cuda-12.8/bin/nvcc" in cmake
    assert not prefix.exists() and not bindir.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the role manages root-owned files")
def test_package_tools_drop_links_left_from_an_artifact_install(run_ansible: Runner, tmp_path: Path) -> None:
    """The links step with both tools as packages (the lab's case: nothing to link): a link this role made
    into the prefix goes, so the packaged binary is the one on PATH; other files are left alone."""
    prefix, bindir = tmp_path / "opt", tmp_path / "bin"
    (prefix / "nvbandwidth-0.7" / "bin").mkdir(parents=True)
    bindir.mkdir()
    (bindir / "nvbandwidth").symlink_to(prefix / "nvbandwidth-0.7" / "bin" / "nvbandwidth")
    (bindir / "all_reduce_perf").symlink_to("/usr/lib/elsewhere/all_reduce_perf")  # not ours
    (bindir / "sendrecv_perf").write_text("#!/bin/sh\n")  # not a link
    playbook = tmp_path / "links.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "benchmarks links only",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {"ansible.builtin.include_role": {"name": "benchmarks", "tasks_from": "links"}}
                    ],
                }
            ]
        )
    )
    knobs = tmp_path / "knobs.yml"
    knobs.write_text(
        yaml.safe_dump({"benchmarks_prefix": str(prefix), "benchmarks_bin_dir": str(bindir), **_pins()})
    )
    res = run_ansible(
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"@{knobs}",
        str(playbook),
        env={"ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles")},
        json_output=True,
    )
    assert res.rc == 0, res.output[-4000:]
    assert sorted(p.name for p in bindir.iterdir()) == ["all_reduce_perf", "sendrecv_perf"]
    assert _changed(res) == ["benchmarks : Remove those links (the packaged binary is the one on PATH)"]
