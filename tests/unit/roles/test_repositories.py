"""The repositories role's files, rendered from inventory settings (spec software.repositories), and the
rdma role's DOCA repository and slurm_node's slurmd files."""

from __future__ import annotations

import pytest
import yaml

from ._support import HERE
from .test_templates import DEBIAN, ROCKY, UBUNTU, render

BOOKWORM = {**DEBIAN, "distribution_release": "bookworm"}
NOBLE = {**UBUNTU, "distribution_release": "noble"}
SITE = {
    "repositories_apt_proxy": "http://10.0.0.5:3142",
    "repositories_no_proxy": ["10.0.0.6", "repo.example"],
    "repositories_distribution_mirror": "http://mirror.example/debian",
    "repositories_security_mirror": "http://mirror.example/debian-security",
}


def _files(facts: dict, variables: dict, family: str = "Debian") -> dict:
    if family == "RedHat":
        templates = {"dnf": "templates/clusterforge-os.repo.j2"}
    else:
        templates = {"proxy": "templates/apt-proxy.conf.j2", "sources": "templates/distribution.sources.j2"}
    return render("repositories", family=family, facts=facts, templates=templates, variables=variables)


def test_apt_proxy_with_direct_hosts() -> None:
    out = _files(BOOKWORM, SITE)["proxy"]
    assert 'Acquire::http::Proxy "http://10.0.0.5:3142";\n' in out
    assert 'Acquire::http::Proxy::10.0.0.6 "DIRECT";\n' in out
    assert 'Acquire::http::Proxy::repo.example "DIRECT";\n' in out


def test_debian_sources_from_the_mirror() -> None:
    out = _files(BOOKWORM, SITE)["sources"]
    stanzas = [s for s in out.split("\n\n") if "Types:" in s]
    assert len(stanzas) == 2
    assert "URIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n" in out
    assert "URIs: http://mirror.example/debian-security\nSuites: bookworm-security\n" in out
    assert out.count("Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg") == 2


def test_ubuntu_sources_without_security_mirror() -> None:
    out = _files(NOBLE, {**SITE, "repositories_security_mirror": ""})["sources"]
    assert "Suites: noble noble-updates\nComponents: main restricted universe\n" in out
    assert "Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg" in out
    assert "-security" not in out


def test_rhel_mirror_repositories() -> None:
    variables = {
        **SITE,
        "repositories_distribution_mirror": "http://repo.example/rocky/",
        "repositories_no_proxy": ["repo.example"],
    }
    out = _files(ROCKY, variables, family="RedHat")["dnf"]
    assert "[clusterforge-baseos]\n" in out and "[clusterforge-appstream]\n" in out
    assert "baseurl=http://repo.example/rocky/$releasever/BaseOS/$basearch/os/\n" in out
    assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-Rocky-9\n" in out
    assert out.count("proxy=_none_") == 2  # the mirror is a no_proxy host


def test_doca_repository_lines() -> None:
    templates = {"list": "templates/doca.list.j2", "repo": "templates/doca.repo.j2"}
    facts = {**BOOKWORM}
    public = render("rdma", facts=facts, templates=templates, variables={"rdma_stack_version": "2.10.0"})
    assert public["list"].splitlines()[-1] == (
        "deb [signed-by=/etc/apt/keyrings/clusterforge-doca.asc] "
        "https://linux.mellanox.com/public/repo/doca/2.10.0/debian12/x86_64/ ./"
    )
    lab = render(
        "rdma",
        facts=facts,
        templates=templates,
        variables={
            "rdma_stack_version": "2.10.0",
            "rdma_doca_apt_repo": "http://10.244.0.1:8780/nvidia",
            "rdma_doca_apt_suite": "stable",
            "rdma_doca_apt_components": ["main"],
            "rdma_doca_apt_repo_trusted": True,
        },
    )
    assert lab["list"].splitlines()[-1] == "deb [trusted=yes] http://10.244.0.1:8780/nvidia stable main"
    rhel = render(
        "rdma", family="RedHat", facts=ROCKY, templates=templates, variables={"rdma_stack_version": "2.10.0"}
    )
    assert "baseurl=https://linux.mellanox.com/public/repo/doca/2.10.0/rhel9.4/x86_64/\n" in rhel["repo"]


def test_slurmd_configless_files() -> None:
    templates = {
        "defaults": "templates/slurmd.defaults.j2",
        "dropin": "templates/slurmd-clusterforge.conf.j2",
    }
    out = render("slurm_node", templates=templates, variables={"slurm_node_conf_server": "10.244.0.1:6817"})
    assert out["defaults"].splitlines()[-1] == 'SLURMD_OPTIONS="--conf-server 10.244.0.1:6817"'
    assert "ConditionPathExists=\n" in out["dropin"] and "Restart=on-failure\n" in out["dropin"]
    plain = render("slurm_node", templates=templates)
    assert "ConditionPathExists" not in plain["dropin"]


def _role_defaults(role: str, *names: str) -> dict[str, str]:
    """The role's own defaults for `names` (the test inventory points the lab at its local repository; these
    tests are about the public repositories the defaults name)."""
    doc = yaml.safe_load(
        (HERE.parents[2] / "playbooks" / "roles" / role / "defaults" / "main.yml").read_text()
    )
    return {n: doc[n] for n in names}


@pytest.mark.parametrize(
    ("arch", "cuda", "doca"), [("x86_64", "x86_64", "x86_64"), ("aarch64", "sbsa", "arm64-sbsa")]
)
def test_nvidia_repositories_follow_the_node_architecture(arch: str, cuda: str, doca: str) -> None:
    """NVIDIA's CUDA and DOCA repositories have one directory per architecture; arm64 servers (Grace, GB200
    trays) are `sbsa` (CUDA) and `arm64-sbsa` (DOCA), from the node's own `ansible_architecture` fact."""
    nv = _role_defaults(
        "nvidia_gpu",
        "nvidia_gpu_apt_repo",
        "nvidia_gpu_apt_key_url",
        "nvidia_gpu_dnf_repo",
        "nvidia_gpu_dnf_gpgkey",
    )
    base = "https://developer.download.nvidia.com/compute/cuda/repos"
    out = render(
        "nvidia_gpu",
        facts={**NOBLE, "architecture": arch},
        variables=nv,
        expressions={"apt": "{{ nvidia_gpu_apt_repo }}", "key": "{{ nvidia_gpu_apt_key_url }}"},
    )
    assert out["apt"] == f"{base}/ubuntu2404/{cuda}/"
    assert out["key"] == f"{base}/ubuntu2404/{cuda}/3bf863cc.pub"
    rhel = render(
        "nvidia_gpu",
        family="RedHat",
        facts={**ROCKY, "architecture": arch},
        variables=nv,
        expressions={"dnf": "{{ nvidia_gpu_dnf_repo }}", "key": "{{ nvidia_gpu_dnf_gpgkey }}"},
    )
    assert rhel["dnf"] == f"{base}/rhel9/{cuda}"
    assert rhel["key"] == f"{base}/rhel9/{cuda}/D42D0685.pub"
    rdma = render(
        "rdma",
        facts={**NOBLE, "architecture": arch},
        expressions={"apt": "{{ rdma_doca_apt_repo }}"},
        variables={"rdma_stack_version": "2.10.0", **_role_defaults("rdma", "rdma_doca_apt_repo")},
    )
    assert rdma["apt"] == f"https://linux.mellanox.com/public/repo/doca/2.10.0/ubuntu24.04/{doca}/"
