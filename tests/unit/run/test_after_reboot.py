"""After the reboot of the provisioning loop: only the roles that asked for it converge again; what the
other roles manage is read before and after the reboot and must read the same, else the node converges in
full (as every node did before). The playbooks are faked: what runs, with which tags, on which hosts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusterforge.remote.node_state import StateRead
from clusterforge.run import provision as provision_mod
from clusterforge.run.ansible import HostResult, PlaybookResult, TaskResult
from clusterforge.run.managed import Managed, reboot_differences

MANAGED = Managed(
    files={"/etc/lldpd.d/clusterforge.conf"},
    packages={"lldpd"},
    services={"lldpd.service", "clusterforge-roce-qos.service"},
    modules={"rdma_cm"},
    services_active={"lldpd.service"},
    services_enabled={"lldpd.service", "clusterforge-roce-qos.service"},
)
STATE: dict[str, Any] = {
    "files": {"/etc/lldpd.d/clusterforge.conf": {"sha256": "a" * 64, "mode": "0644", "owner": "root"}},
    "packages": {"lldpd": {"version": "1.0.16-1+deb12u1", "hold": False}},
    "services": {
        "lldpd.service": {"active": "active", "enabled": "enabled"},
        # enabled only: never started by the provision, runs at boot (a oneshot)
        "clusterforge-roce-qos.service": {"active": "inactive", "enabled": "enabled"},
    },
    "modules": {"rdma_cm": True},
}


def _with(path: str, value: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(STATE))
    kind, _, name = path.partition(":")
    key, _, attr = name.partition("#")
    if attr:
        doc[kind][key][attr] = value
    else:
        doc[kind][key] = value
    return doc


def test_the_same_state_after_the_boot_is_no_difference() -> None:
    booted = _with("services:clusterforge-roce-qos.service#active", "active")  # the oneshot ran at boot
    assert reboot_differences(MANAGED, STATE, STATE) == []
    assert reboot_differences(MANAGED, STATE, booted) == []


@pytest.mark.parametrize(
    ("after", "words"),
    [
        (
            _with("files:/etc/lldpd.d/clusterforge.conf", None),
            "file /etc/lldpd.d/clusterforge.conf: expected sha256 aaaaaaaaaaaa, found missing",
        ),
        (
            _with("packages:lldpd#version", "1.0.17-1"),
            "package lldpd: expected 1.0.16-1+deb12u1, found 1.0.17-1",
        ),
        (_with("modules:rdma_cm", False), "kernel module rdma_cm: expected loaded, found not loaded"),
        (
            _with("services:lldpd.service#active", "inactive"),
            "service lldpd.service state: expected active, found inactive",
        ),
        (_with("services:lldpd.service#enabled", "disabled"), "lldpd.service enabled: expected enabled"),
        (
            _with("services:clusterforge-roce-qos.service#active", "failed"),
            "service clusterforge-roce-qos.service state: expected not failed, found failed",
        ),
    ],
)
def test_what_did_not_survive_the_reboot_is_named(after: dict[str, Any], words: str) -> None:
    diffs = reboot_differences(MANAGED, STATE, after)
    assert len(diffs) == 1 and words in diffs[0], diffs


class FakeNodes:
    """site.yml, pending.yml, reboot.yml and the state reads of two nodes; what each call was."""

    def __init__(self, sources: str, after: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, str, str]] = []  # (playbook, limit, tags)
        self.sources = sources
        self.after = after or {}
        self.reads: list[tuple[str, ...]] = []
        self.pending_reads = 0

    def run_playbook(self, playbook: str, inventory: Path, **kw: Any) -> PlaybookResult:
        hosts = [h for h in (kw.get("limit") or "").split(",") if h]
        self.calls.append((playbook, ",".join(hosts), kw.get("tags") or ""))
        tasks: list[TaskResult] = []
        if playbook == "pending.yml":
            self.pending_reads += 1
            if self.pending_reads == 1:  # before the reboot: the kernel command line needs one
                for h in hosts:
                    tasks.append(
                        TaskResult(h, "Read the pending-reboot record", "", "ok", stdout="os_tuning: x")
                    )
                    tasks.append(
                        TaskResult(h, "Read the pending-reboot sources", "", "ok", stdout=self.sources)
                    )
        managed = {h: Managed.from_dict(MANAGED.to_dict()) for h in hosts} if playbook == "site.yml" else {}
        return PlaybookResult(
            playbook, 0, "successful", {h: HostResult(h, ok=1) for h in hosts}, tasks, "", 0.0, managed
        )

    def read_states(self, plan_doc: Any, inventory: Path, names: dict[str, Any]) -> dict[str, StateRead]:
        self.reads.append(tuple(sorted(names)))
        later = len(self.reads) > 1
        return {n: StateRead(n, self.after.get(n, STATE) if later else STATE) for n in names}


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> Any:
    def run(sources: str, after: dict[str, Any] | None = None, **opts: Any) -> tuple[FakeNodes, Any]:
        fake = FakeNodes(sources, after)
        monkeypatch.setattr(provision_mod, "run_playbook", fake.run_playbook)
        monkeypatch.setattr(provision_mod, "read_states", fake.read_states)
        monkeypatch.setattr(provision_mod, "resolve_hosts", lambda inv, limit: ["n1", "n2"])
        doc = {
            "cluster": "c",
            "plan_hash": "h",
            "rollout": {"serial": "100%", "max_fail_percentage": 0},
            "nodes": [{"name": "n1"}, {"name": "n2"}],
        }
        report = provision_mod.provision(doc, Path("/nonexistent"), provision_mod.Options(**opts), None)
        return fake, report

    return run


FACT = json.dumps({"reboot_required": True, "reasons": {"os_tuning": ["os_tuning: x"], "rdma": []}})


def test_only_the_roles_that_asked_converge_again(loop: Any) -> None:
    fake, report = loop(FACT)
    assert report.ok and all(report.hosts[h].rebooted for h in ("n1", "n2"))
    assert [c for c in fake.calls if c[0] != "pending.yml"] == [
        ("site.yml", "n1,n2", ""),
        ("reboot.yml", "n1,n2", ""),
        ("site.yml", "n1,n2", "os_tuning"),  # the role with reasons; rdma recorded none
    ]
    # before the reboot, and back after it; the read back is the applied state (no third read)
    assert fake.reads == [("n1", "n2"), ("n1", "n2")]
    assert report.hosts["n1"].applied["state"] == STATE and not report.hosts["n1"].message


def test_a_node_that_reads_back_differently_converges_in_full(loop: Any) -> None:
    fake, report = loop(FACT, after={"n2": _with("services:lldpd.service#active", "failed")})
    assert report.ok
    assert [c for c in fake.calls if c[0] == "site.yml"][1:] == [
        ("site.yml", "n1,n2", "os_tuning"),
        ("site.yml", "n2", ""),
    ]
    assert "service lldpd.service state: expected active, found failed" in report.hosts["n2"].message
    assert "converged in full" in report.hosts["n2"].message and not report.hosts["n1"].message
    assert fake.reads == [("n1", "n2"), ("n1", "n2"), ("n2",)]  # n2 read again after its full run


def test_converge_all_after_reboot_runs_every_role(loop: Any) -> None:
    fake, report = loop(FACT, converge_all_after_reboot=True)
    assert report.ok
    assert [c for c in fake.calls if c[0] == "site.yml"] == [
        ("site.yml", "n1,n2", ""),
        ("site.yml", "n1,n2", ""),
    ]


@pytest.mark.parametrize(
    "sources",
    [
        "",  # no fact file (cat exit 1): no role is known to own the reason
        "not json",
        json.dumps({"reasons": {"someone-else": ["manual: firmware"]}}),  # not a role of site.yml
    ],
)
def test_reasons_no_role_owns_converge_in_full(loop: Any, sources: str) -> None:
    fake, report = loop(sources)
    assert report.ok
    assert [c for c in fake.calls if c[0] == "site.yml"] == [
        ("site.yml", "n1,n2", ""),
        ("site.yml", "n1,n2", ""),
    ]
    assert fake.reads == [("n1", "n2")]  # no read around the reboot: only the applied state's at the end


def test_converged_nodes_are_left_alone(loop: Any) -> None:
    """A node a read found converged is neither run nor drained nor read: a skipped host with the reason."""
    fake, report = loop(FACT, converged={"n2": "read as applied"})
    assert report.ok
    assert {c[1] for c in fake.calls} == {"n1"}  # site.yml, pending, reboot: only n1
    n2 = report.hosts["n2"]
    assert n2.status == "skipped" and n2.message == "converged: read as applied" and n2.applied is None
    assert all("n2" not in r for r in fake.reads)


def test_all_converged_runs_no_playbook(loop: Any) -> None:
    fake, report = loop(FACT, converged={"n1": "same", "n2": "same"})
    assert report.ok and fake.calls == [] and fake.reads == []
    assert {h.status for h in report.hosts.values()} == {"skipped"}
