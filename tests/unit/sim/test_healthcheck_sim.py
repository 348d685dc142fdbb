"""The node-side health check against a simulated node: its dmesg, its dcgm-exporter, sysfs link files,
and a scripted `scontrol` (Xid 79 drains with the registry's reason; a drained node is left as it is)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterforge.health import nodecheck
from clusterforge.lab.sim import dcgm_exporter
from clusterforge.plan.desired_monitoring import monitoring_desired, monitoring_input
from clusterforge.spec.model import Certification, Software

from .conftest import SimNode

# The spec defaults of what the monitoring state reads (dcgm_exporter, health_interval_s)
DEFAULT_PINS = monitoring_input(
    {"dcgm_exporter": Software.model_fields["dcgm_exporter"].default},
    {"health_interval_s": Certification.model_fields["health_interval_s"].default},
)


class Node:
    """Env hooks for one simulated node; `slurm_state` is what `scontrol show node` answers."""

    def __init__(self, sim: SimNode) -> None:
        self.sim, self.slurm_state, self.calls = sim, "IDLE", []  # type: list[list[str]]
        sku = sim.plan["skus"][sim.sku]
        rails = sim.plan["nodes"][0]["rails"]
        self.cfg: dict[str, Any] = monitoring_desired(sku, rails, DEFAULT_PINS)["health"]
        self.cfg["state_dir"] = "/var/lib/clusterforge/health"
        for r in rails:
            self.link(r["netdev"], "up", 2)
        (sim.root / "var/lib/prometheus/node-exporter").mkdir(parents=True, exist_ok=True)

    def link(self, dev: str, oper: str, changes: int) -> None:
        self.sim.write(f"/sys/class/net/{dev}/operstate", oper + "\n")
        self.sim.write(f"/sys/class/net/{dev}/carrier_changes", f"{changes}\n")

    def run(self, argv: list[str], timeout: float) -> tuple[int, str]:
        self.calls.append(argv)
        if argv[0] == "dmesg":
            rc, out, _ = self.sim.run("dmesg")
            return rc, out
        if argv[:3] == ["scontrol", "show", "node"]:
            return 0, f"NodeName={argv[-1]} State={self.slurm_state} Reason=x"
        return 0, ""

    def http(self, url: str, timeout: float) -> str:
        with self.sim.env():
            return dcgm_exporter.render(dcgm_exporter.S.load(), "570.133.20", "node-01")

    def check(self, now: float = 1_800_000_000.0) -> tuple[int, str]:
        # the kernel's clock for the lines a fault logs next (dmesg timestamps count from boot)
        self.sim.write("/proc/uptime", f"{now - 1_799_999_000.0 + 1:.2f} 0.00\n")
        env = nodecheck.Env(root=str(self.sim.root), now=now, run=self.run, http=self.http)
        return nodecheck.run(self.cfg, env, "node-01", "slurm")


def _updates(n: Node) -> list[list[str]]:
    return [c for c in n.calls if c[:2] == ["scontrol", "update"]]


def test_healthy_node_is_left_alone(node: SimNode) -> None:
    n = Node(node)
    rc, line = n.check()
    assert (rc, line.split(" (")[0]) == (0, "node-01: healthy") and not _updates(n)
    prom = node.read("/var/lib/prometheus/node-exporter/clusterforge_health.prom")
    assert 'clusterforge_health_check_failed{node="node-01",check="passive.xid.79"} 0' in prom


def test_xid_79_drains_with_the_check_and_action(node: SimNode) -> None:
    n = Node(node)
    n.check()
    node.fault("xid-79", gpu=3)
    rc, line = n.check(1_800_000_300.0)
    assert rc == 1
    (update,) = _updates(n)
    assert update[:4] == ["scontrol", "update", "NodeName=node-01", "State=DRAIN"]
    assert update[4] == "Reason=clusterforge: passive.xid.79 pci 0000:5d:00 79: drain then reboot/service"
    prom = node.read("/var/lib/prometheus/node-exporter/clusterforge_health.prom")
    assert 'check="passive.xid.79"} 1' in prom and 'check="passive.gpu_lost"} 1' in prom
    # the next run: Slurm says drained; the check leaves it (and its reason) alone, never resumes
    n.slurm_state = "IDLE+DRAIN"
    rc, line = n.check(1_800_000_600.0)
    assert rc == 1 and "left drained" in line and len(_updates(n)) == 1
    assert not [c for c in n.calls if any("RESUME" in w.upper() for w in c)]


def test_second_xid_79_within_a_day_escalates_to_service(node: SimNode) -> None:
    n = Node(node)
    n.check()
    node.fault("xid-79", gpu=3)
    n.check(1_800_000_300.0)
    node.clear("xid-79")
    node.reboot()
    node.services_up()
    node.fault("xid-79", gpu=3)
    n.check(1_800_003_600.0)
    reasons = [u[4] for u in _updates(n)]
    assert reasons[-1].startswith(
        "Reason=clusterforge: passive.xid.79 pci 0000:5d:00 79: service +hardware ticket"
    )
    assert reasons[-1].endswith("(2x in 1 d)")


def test_someone_elses_drain_is_kept(node: SimNode) -> None:
    n = Node(node)
    n.slurm_state = "IDLE+DRAIN"
    node.fault("ecc-uncorrectable", gpu=1)
    rc, line = n.check()
    assert rc == 1 and not _updates(n) and "left drained" in line


def test_rail_down_and_flaps(node: SimNode) -> None:
    n = Node(node)
    dev = n.cfg["rails"][2]["netdev"]
    n.check()
    n.link(dev, "up", 4)  # one flap: alert only
    rc, _ = n.check(1_800_000_100.0)
    assert rc == 0 and not _updates(n)
    n.link(dev, "up", 8)  # two more within the hour: drain + cable ticket
    rc, _ = n.check(1_800_000_200.0)
    assert rc == 1
    assert (
        _updates(n)[-1][4]
        == f"Reason=clusterforge: passive.rail_link_flap rail2 {dev}: drain +cable ticket (3x in 1 h)"
    )
    n.slurm_state = "IDLE"
    n.link(dev, "down", 9)
    rc, _ = n.check(1_800_090_000.0)
    assert _updates(n)[-1][4].startswith(f"Reason=clusterforge: passive.rail_link_down rail2 {dev}: drain")


def test_unreadable_exporter_is_an_error_not_a_drain(node: SimNode) -> None:
    n = Node(node)

    def down(url: str, timeout: float) -> str:
        raise OSError("connection refused")

    env = nodecheck.Env(root=str(node.root), now=1_800_000_000.0, run=n.run, http=down)
    rc, line = nodecheck.run(n.cfg, env, "node-01", "slurm")
    assert rc == 0 and "could not check" in line and not _updates(n)


def test_expired_certificate_cache(node: SimNode, tmp_path: Path) -> None:
    n = Node(node)
    node.write("/var/lib/clusterforge/health/last-run.json", json.dumps({"expires_at_s": 1_700_000_000}))
    rc, _line = n.check()
    assert rc == 1 and "passive.certificate_expired: drain" in _updates(n)[-1][4]
