"""A simulated node under a temporary root: the very node-side code, run in-process (no lab needed)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterforge.lab.sim import main, paths
from clusterforge.lab.sim import state as S
from clusterforge.spec.sku import catalog

DRIVER = {"version": "570.133.20", "branch": "570", "cuda": "12.8"}


def make_plan(sku: str = "h100-sxm-8x400g-roce", nodes: int = 2) -> dict[str, Any]:
    sku_d = catalog()[sku].model_dump(mode="json")
    ib = sku_d["compute_nics"]["link_layer"] == "InfiniBand"
    out = []
    for k in range(nodes):
        rails = [
            {
                "index": r["rail"],
                "hca": r["hca"],
                "netdev": r["netdev"],
                "pci": r["pci"],
                "gpu": r["gpu"],
                "numa": r["numa"],
                "port": 1,
                "ip": f"10.245.{r['rail']}.{11 + k}",
                "prefix": 24,
                "mtu": 4092 if ib else 9000,
                "mac": f"02:cf:00:{r['rail'] + 1:02x}:00:{k:02x}",
                "link_layer": sku_d["compute_nics"]["link_layer"],
                "speed_gbps": sku_d["compute_nics"]["speed_gbps"],
            }
            for r in sku_d["compute_nics"]["rails"]
        ]
        out.append(
            {
                "name": f"node-{k + 1:02d}",
                "sku": sku,
                "pool": "p",
                "rack": "r01",
                "ordinal": k,
                "fabric": "f0",
                "fabric_type": "infiniband" if ib else "roce",
                "mgmt_ip": f"10.244.0.{11 + k}",
                "mgmt_netdev": "mgmt0",
                "rails": rails,
            }
        )
    return {
        "cluster": "t",
        "skus": {sku: sku_d},
        "nodes": out,
        "software": {
            "nvidia_driver": {"branch": "570", "version": "570.133.20"},
            "nic_firmware": "28.43.2026",
            "dcgm": "4.2.3",
            "nccl": "2.26.2",
            "cuda": "12.8",
        },
    }


class SimNode:
    def __init__(
        self, root: Path, sku: str, node: str = "node-01", plan: dict[str, Any] | None = None
    ) -> None:
        self.root = root
        self.sku = sku
        self.node = node
        self.plan = plan if plan is not None else make_plan(sku)
        (root / "dev").mkdir(parents=True, exist_ok=True)  # a node's /dev (a fresh tmpfs at each boot)
        with self.env():
            S.save(S.initial_state(self.plan, node))
            self.install("nvidia-driver", DRIVER)
            self.install("datacenter-gpu-manager", {"version": "4.2.3"})
            self.install("libnccl2", {"version": "2.26.2", "cuda": "12.8"})
            self.install("nvidia-fabricmanager", {"version": DRIVER["version"]})
        self.boot()
        self.services_up()

    @contextlib.contextmanager
    def env(self) -> Iterator[None]:
        old = os.environ.get("CLUSTERFORGE_SIM_ROOT")
        os.environ["CLUSTERFORGE_SIM_ROOT"] = str(self.root)
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("CLUSTERFORGE_SIM_ROOT", None)
            else:
                os.environ["CLUSTERFORGE_SIM_ROOT"] = old

    def install(self, name: str, info: dict[str, Any] | None) -> None:
        with self.env():
            target = paths.p(f"{paths.PKG_MARKERS}/{name}.json")
            if info is None:
                target.unlink(missing_ok=True)
            else:
                paths.write(f"{paths.PKG_MARKERS}/{name}.json", json.dumps(info))

    def run(self, *argv: str, stdin: str = "") -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        old_stdin = os.sys.stdin
        try:
            os.sys.stdin = io.StringIO(stdin)
            with self.env(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main.run(["clusterforge-sim", *argv])
        finally:
            os.sys.stdin = old_stdin
        return rc, out.getvalue(), err.getvalue()

    def ok(self, *argv: str) -> str:
        rc, out, err = self.run(*argv)
        assert rc == 0, f"{argv}: rc {rc}\n{out}\n{err}"
        return out

    def boot(self) -> None:
        with self.env():
            paths.p(f"{paths.RUN}").mkdir(parents=True, exist_ok=True)
            for f in paths.p(paths.RUN).glob("booted"):
                f.unlink()
        self.ok("boot")

    def reboot(self) -> None:
        """What a node reboot does: /run is a fresh tmpfs, then the boot unit runs."""
        with self.env():
            shutil.rmtree(paths.p(paths.RUN), ignore_errors=True)
            for d in ("sys", "proc", "dev"):
                shutil.rmtree(paths.p(f"/{d}"), ignore_errors=True)
            paths.p("/dev").mkdir()
        self.boot()

    def services_up(self) -> None:
        """What nvidia-persistenced and nv-fabricmanager do when their units start (they fork: not here)."""
        with self.env(), S.locked() as st:
            for g in st["gpus"]:
                g["persistence"] = True
                g["fabric"] = "Completed"

    def fault(self, kind: str, **params: Any) -> None:
        self.ok("fault", "set", kind, *[f"{k}={v}" for k, v in params.items()])

    def clear(self, kind: str) -> None:
        self.ok("fault", "clear", kind)

    @property
    def state(self) -> dict[str, Any]:
        with self.env():
            return copy.deepcopy(S.load())

    def read(self, path: str) -> str:
        return (self.root / path.lstrip("/")).read_text()

    def write(self, path: str, text: str) -> None:
        p = self.root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


@pytest.fixture
def simroot(tmp_path: Path) -> Iterator[Path]:
    """A node root on tmpfs when there is one (a booted view is ~1400 small files, as in the node's tmpfs)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="cf-sim-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def node(simroot: Path) -> SimNode:
    return SimNode(simroot / "roce", "h100-sxm-8x400g-roce")


@pytest.fixture
def ibnode(simroot: Path) -> SimNode:
    return SimNode(simroot / "ib", "h100-sxm-8x400g-ib")


@pytest.fixture
def a100(simroot: Path) -> SimNode:
    return SimNode(simroot / "a100", "a100-sxm-8x200g-hdr")
