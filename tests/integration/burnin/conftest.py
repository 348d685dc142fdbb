"""Burn-in on the lab: every node given what provisioning would give a burn-in (the simulated NVIDIA stack
from the lab's apt repository, its services, nvidia_peermem, rail addresses), then reset to the pristine
image at the end of the module (as the simulator's own lab tests leave the nodes).

Records and certificates go to a temp folder; faults are cleared and every node is resumed in Slurm
afterwards, whatever happened.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
PACKAGES = [
    "nvidia-driver-570=570.133.20-1",
    "nvidia-fabricmanager-570=570.133.20-1",
    "datacenter-gpu-manager-4-cuda12",
    "clusterforge-sim-nccl-tests",
    "clusterforge-sim-nvbandwidth",
]


def sh(lab: Any, node: str, cmd: str, timeout: float = 600) -> str:
    r = lab.exec(node, ["sh", "-c", cmd], timeout=timeout)
    assert r.returncode == 0, f"{node}: {cmd}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return str(r.stdout)


def prepare(lab: Any, node: str) -> None:
    from clusterforge.lab.sim import paths
    from clusterforge.lab.sim.state import initial_state

    if lab.exec(node, ["test", "-f", paths.STATE]).returncode != 0:
        st = initial_state(lab.plan.raw, node)
        r = lab.exec(
            node,
            ["sh", "-c", f"mkdir -p {paths.STATE.rsplit('/', 1)[0]} && cat > {paths.STATE}"],
            input=json.dumps(st),
        )
        assert r.returncode == 0, r.stderr
        sh(lab, node, "systemctl start clusterforge-sim-boot.service clusterforge-sim-kernel.service")
    url = lab.repo.url
    sh(
        lab,
        node,
        'mkdir -p /etc/apt/keyrings && python3 -c "import urllib.request,sys; '
        f"sys.stdout.buffer.write(urllib.request.urlopen('{url}/clusterforge-lab-archive-keyring.gpg').read())\""
        " > /etc/apt/keyrings/clusterforge-lab.gpg",
    )
    sh(  # one source for the lab repository: a node provisioned before may carry another one for it
        lab,
        node,
        f"grep -rlF '{url}' /etc/apt/sources.list.d/ | xargs -r rm -f; "
        f"echo 'deb [signed-by=/etc/apt/keyrings/clusterforge-lab.gpg] {url} stable main' "
        "> /etc/apt/sources.list.d/clusterforge-lab-nvidia.list",
    )
    sh(
        lab,
        node,
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq " + " ".join(PACKAGES),
    )
    sh(
        lab,
        node,
        "systemctl enable --now nvidia-fabricmanager.service nvidia-dcgm.service "
        "nvidia-persistenced.service && modprobe nvidia_peermem",
    )
    rails = lab.plan.node(node).raw["rails"]
    sh(
        lab,
        node,
        "; ".join(
            f"ip link set dev {r['netdev']} mtu {r['mtu']} && "
            f"ip addr replace {r['ip']}/{r['prefix']} dev {r['netdev']}"
            for r in rails
        ),
    )


def unprepare(lab: Any, node: str) -> None:
    from clusterforge.lab.sim import paths

    try:
        lab.exec(node, [paths.ENTRY, "fault", "clear", "all"], timeout=60)
    finally:
        lab.reset(node)


@pytest.fixture(scope="module")
def burnin_lab(lab: Any) -> Iterator[Any]:
    """The lab, prepared (this session is registered as a lab user by the `lab` fixture, so no other session
    takes the lab down under it)."""
    names = [n.name for n in lab.plan.nodes]
    if not (lab.repo.root / "nvidia/dists/stable/Release").exists():
        lab.repo.build()
        lab.repo.start()
    try:
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            list(pool.map(lambda n: prepare(lab, n), names))
        yield lab
    finally:
        resume_all(lab)
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            list(pool.map(lambda n: unprepare(lab, n), names))


def resume_all(lab: Any) -> None:
    """Every lab node back in Slurm, whatever burn-in left drained."""
    from clusterforge.pool.slurm import SlurmPool

    pool = SlurmPool(env=dict(os.environ, **lab.slurm_env()))
    for name, st in pool.status([n.name for n in lab.plan.nodes]).items():
        if st.state in ("drained", "draining", "down"):
            pool.resume(name, force=True)


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLUSTERFORGE_DB", str(tmp_path / "records.db"))
    monkeypatch.setenv("CLUSTERFORGE_CERT_DIR", str(tmp_path / "certs"))
    monkeypatch.delenv("CLUSTERFORGE_CERT_KEY", raising=False)
    return tmp_path / "records.db"
