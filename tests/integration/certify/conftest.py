"""Certification against the session lab, provisioned once.

Uses the suite's session fixture `provisioned_lab` (one real `clusterforge provision` of the session lab);
without it, provisions the session lab by hand once. `CLUSTERFORGE_LAB_SNAPSHOT=TAG` instead restores every
node from a snapshot of a provisioned lab (`clusterforge lab snapshot NODE --tag TAG`), for quick reruns.
Records, certificates and JSON reports go to a private folder; Slurm is the lab's.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LAB_SPEC

LOCK = Path("/run/lock/clusterforge-lab-tests.lock")  # as tests/integration/conftest.py


@dataclass
class CertifyLab:
    lab: Any
    doc: dict[str, Any]
    inventory: Path
    spec: Path
    out: Path
    runs: int = 0

    @property
    def nodes(self) -> list[str]:
        return [n["name"] for n in self.doc["nodes"]]

    def pool(self) -> Any:
        from clusterforge import targets

        return targets.pool_manager(self.doc)

    def wait_lldp_heard(self, nodes: list[str], timeout: float = 60.0) -> None:
        """Until every RoCE rail of `nodes` has heard its switch over LLDP: a node just rebooted has not
        (the cabling check calls that silence an error, not a verdict, for one switch transmit interval)."""
        import json
        import time

        from clusterforge.lab.labplan import load

        lp = load(self.inventory / "plan.json")
        want = {n: {r.netdev for r in lp.node(n).rails} for n in nodes if lp.node(n).fabric_type == "roce"}
        deadline = time.monotonic() + timeout
        for node, netdevs in want.items():
            while True:
                out = self.lab.exec(node, ["lldpcli", "-f", "json0", "show", "neighbors"], timeout=30)
                itfs = json.loads(out.stdout or "{}").get("lldp", [{}])[0].get("interface", [])
                if netdevs <= {i.get("name") for i in itfs}:
                    break
                assert time.monotonic() < deadline, f"{node}: rails {sorted(netdevs)} never all heard LLDP"
                time.sleep(1)

    def certify(
        self, tier: str = "quick", limit: str | None = None, admit: bool = True, via: str = "ssh"
    ) -> tuple[int, dict[str, Any]]:
        import json

        from rich.console import Console

        from clusterforge.flows.certify import Outputs, certify_flow

        self.runs += 1
        out = self.out / f"run{self.runs}-{tier}.json"
        log = (self.out / f"run{self.runs}-{tier}.log").open("w")
        rc = certify_flow(
            self.spec,
            tier,
            limit,
            admit,
            Console(file=log, width=200),
            Outputs(json=out, junit=out.with_suffix(".xml"), via=via),
        )
        log.close()
        return rc, json.loads(out.read_text())

    def last_log(self) -> str:
        return sorted(self.out.glob(f"run{self.runs}-*.log"))[-1].read_text()


@pytest.fixture(scope="session")
def certify_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("certify")
    saved = {k: os.environ.get(k) for k in ("CLUSTERFORGE_DB", "CLUSTERFORGE_CERT_DIR")}
    os.environ["CLUSTERFORGE_DB"] = str(root / "records.db")
    os.environ["CLUSTERFORGE_CERT_DIR"] = str(root / "certs")
    yield root
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _provision_by_hand(lab: Any) -> None:
    from rich.console import Console

    from clusterforge.flows.provision import provision_flow
    from clusterforge.run.provision import Options

    with open(os.devnull, "w") as sink:
        rc = provision_flow(LAB_SPEC, Options(), Console(file=sink))
    assert rc == 0, "provisioning the session lab failed (see `clusterforge provision` output)"


@pytest.fixture(scope="session")
def certify_lab(request: pytest.FixtureRequest, certify_env: Path) -> Iterator[CertifyLab]:
    """The provisioned lab; the lab tests' lock is held meanwhile (faults, drains and reboots here must not
    meet another session's tests on the same nodes)."""
    from clusterforge.flows.plan import load_plan

    plan, inventory = load_plan(LAB_SPEC)  # writes inventory/generated/lab/ before the lab reads its plan
    snapshot = os.environ.get("CLUSTERFORGE_LAB_SNAPSHOT")  # a provisioned state kept by `lab snapshot`
    if snapshot:
        lab = request.getfixturevalue("lab")
        for n in plan.doc["nodes"]:
            lab.restore(n["name"], snapshot, wait=False)
        lab.wait_ssh([n["name"] for n in plan.doc["nodes"]], timeout=180)
    else:
        try:
            provisioned = request.getfixturevalue("provisioned_lab")
            lab = getattr(provisioned, "lab", provisioned)
        except pytest.FixtureLookupError:
            lab = request.getfixturevalue("lab")
            _provision_by_hand(lab)
    assert getattr(lab, "cluster", plan.doc["cluster"]) == plan.doc["cluster"]
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield CertifyLab(lab, plan.doc, inventory, LAB_SPEC, certify_env)
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
