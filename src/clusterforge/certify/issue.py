"""Bridge to the records API: the run and its lock, check results (every attempt), part serials, node
verdicts, and certificates (issued only for nodes whose validator run completed)."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.certify.results import CheckResult, NodeResult
from clusterforge.plan.expect import NodeExpect

PARTS_CHECK = "inventory.parts"


def parts_of(res: NodeResult) -> dict[str, list[dict[str, Any]]]:
    """GPU serials and NIC GUIDs the inventory check recorded (empty when it did not run)."""
    for c in res.checks:
        if c.check_id == PARTS_CHECK and c.status == "pass":
            parts = (c.evidence.get("notes") or {}).get("parts") or {}
            return {"gpu": list(parts.get("gpu", [])), "nic": list(parts.get("nic", []))}
    return {"gpu": [], "nic": []}


def tool_versions_of(res: NodeResult) -> dict[str, str]:
    for c in res.checks:
        if c.check_id == PARTS_CHECK and c.status == "pass":
            return {
                k: str(v) for k, v in ((c.evidence.get("notes") or {}).get("tool_versions") or {}).items()
            }
    return {}


def record_rows(res: NodeResult) -> list[Any]:
    """Records rows for a node: one per check, and for a measured check one per attempt (the check's own
    verdict on the last row, so "last attempt" queries give the check's outcome)."""
    from clusterforge.records import CheckResult as Row

    rows: list[Any] = []
    for c in res.checks:
        if c.status not in ("pass", "fail", "error"):
            continue
        attempts = list(c.evidence.get("attempts") or [])
        for a in attempts[:-1]:
            rows.append(
                Row(
                    node=res.node,
                    check_id=c.check_id,
                    status="pass" if a.get("passed") else ("error" if a.get("error") else "fail"),
                    expected=c.expected,
                    found=a.get("value"),
                    evidence={"attempt": a},
                    attempt=int(a.get("n", 1)),
                    message=a.get("error") or None,
                    fix=c.fix,
                )
            )
        rows.append(
            Row(
                node=res.node,
                check_id=c.check_id,
                status=c.status,
                expected=c.expected,
                found=c.found,
                evidence=c.evidence,
                attempt=len(attempts) or 1,
                duration_s=c.duration_s,
                message=c.message or None,
                fix=c.fix,
            )
        )
    return rows


def cert_checks(checks: list[CheckResult]) -> list[dict[str, Any]]:
    return [
        {
            "id": c.check_id,
            "status": c.status,
            "expected": c.expected,
            "found": c.found,
            "evidence": c.evidence,
            "message": c.message,
            "fix": c.fix,
            "duration_s": c.duration_s,
        }
        for c in checks
        if c.status in ("pass", "fail", "error")
    ]


@dataclass
class Recorder:
    """One certify run in the records DB: started with the node lock, heartbeated, finished once."""

    store: Any
    run_id: str
    certificates: dict[str, dict[str, Any]] = field(default_factory=dict)
    cert_paths: dict[str, Path] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, cluster: str, plan_hash: str, spec: Path, tier: str, nodes: list[str]) -> Recorder:
        """Raises ``NodesBusy`` when another live run holds one of the nodes."""
        from clusterforge.records import DEFAULT_LEASE_S, Store

        store = Store()
        run_id = store.start_run(
            "certify",
            cluster,
            plan_hash=plan_hash,
            spec_path=str(spec),
            tier=tier,
            argv=sys.argv,
            nodes=nodes,
        )
        rec = cls(store, run_id)
        threading.Thread(target=rec._beat, args=(DEFAULT_LEASE_S / 4,), daemon=True).start()
        return rec

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.store.heartbeat(self.run_id)
            except Exception:  # the run finished meanwhile, or the DB is busy: the next beat retries
                if self._stop.is_set():
                    return

    def node_done(self, res: NodeResult, node: NodeExpect) -> None:
        from clusterforge.records import Part

        self.store.add_check_results(self.run_id, record_rows(res))
        parts = parts_of(res)
        found = [Part("gpu", int(g["index"]), str(g["serial"])) for g in parts["gpu"] if g.get("serial")]
        found += [Part("nic", int(n["index"]), str(n["serial"])) for n in parts["nic"] if n.get("serial")]
        if found:
            self.store.record_parts(self.run_id, res.node, found)
        self.store.add_node_result(
            self.run_id,
            res.node,
            res.verdict,
            duration_s=round(res.seconds, 3),
            expectation_digest=node.digest,
        )

    def finish(self, status: str, message: str | None = None) -> None:
        self._stop.set()
        self.store.finish_run(self.run_id, status, message)

    def issue(self, res: NodeResult, node: NodeExpect, tier: str) -> dict[str, Any] | None:
        """The node's certificate for ``tier``; a full run also issues the quick certificate (its checks
        are a superset), so it counts where the policy requires quick."""
        cert = self._issue(res, node, tier, res.checks)
        if cert is not None and tier == "full":
            self._issue(res, node, "quick", [c for c in res.checks if "quick" in c.tiers])
        return cert

    def _issue(
        self, res: NodeResult, node: NodeExpect, tier: str, checks: list[CheckResult]
    ) -> dict[str, Any] | None:
        """Seal and write the node's certificate; none when its run did not complete (never a false pass)."""
        if not res.complete or res.unreachable:
            return None
        from clusterforge.records import certificate as certmod

        parts = parts_of(res)
        cert = certmod.build(
            cluster=node.cluster,
            node=res.node,
            expectation_digest=node.digest,
            plan_hash=node.plan_hash,
            tier=tier,
            checks=cert_checks(checks),
            tool_versions=tool_versions_of(res),
            gpu_serials=[
                {"index": g["index"], "serial": g["serial"], "bus_id": g.get("bus_id")} for g in parts["gpu"]
            ],
            nic_serials=[
                {"index": n["index"], "serial": n["serial"], "hca": n.get("hca")} for n in parts["nic"]
            ],
            validity_hours=float(node.certification.get("validity_hours", 720)),
            run_id=self.run_id,
        )
        path = self.store.issue_certificate(cert)
        self.cert_paths.setdefault(res.node, path)
        self.certificates.setdefault(res.node, cert)
        return cert
