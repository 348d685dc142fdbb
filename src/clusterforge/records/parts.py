"""Part serials over time: each run records the GPU and NIC serials it saw in each slot of each node.

From the sightings: the history of a serial (which nodes and runs it was in, and whether the node
failed there), the swaps of a node (a slot whose serial changed), and repeat offenders (serials present
in failing nodes in several runs, also across nodes, since a part's history follows it through swaps).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from clusterforge.records._util import iso, utcnow
from clusterforge.records.db import Database
from clusterforge.records.model import Offender, Part, PartSighting, RecordsError, Swap
from clusterforge.records.results import COUNTED_STATUSES
from clusterforge.records.schema import PART_KINDS

_SIGHTINGS = f"""
SELECT p.*, n.verdict AS verdict,
       (SELECT group_concat(check_id, ',') FROM (
            SELECT DISTINCT c.check_id FROM check_results c
             WHERE c.run_id = p.run_id AND c.node = p.node AND c.status != 'pass'
               AND c.attempt = (SELECT MAX(attempt) FROM check_results c2 WHERE c2.run_id = c.run_id
                                 AND c2.node = c.node AND c2.check_id = c.check_id)
             ORDER BY c.check_id)) AS failed
  FROM part_sightings p
  JOIN runs r ON r.id = p.run_id
  LEFT JOIN node_results n ON n.run_id = p.run_id AND n.node = p.node
 WHERE r.status IN {COUNTED_STATUSES}
"""


class PartsMixin(Database):
    def record_parts(
        self, run_id: str, node: str, parts: Iterable[Part], now: datetime | None = None
    ) -> None:
        """The serials seen in `node` by a running run, one per (kind, slot)."""
        at = iso(now or utcnow())
        rows = []
        for p in parts:
            if p.kind not in PART_KINDS:
                raise RecordsError(f"part kind must be one of {', '.join(PART_KINDS)}; got {p.kind!r}")
            if not p.serial:
                raise RecordsError(f"{node} {p.kind}{p.slot}: empty serial")
            rows.append((run_id, node, p.kind, int(p.slot), p.serial, at))
        with self._write() as db:
            row = db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None or row["status"] != "running":
                raise RecordsError(f"run {run_id} is not running: it cannot record parts")
            db.executemany(
                "INSERT OR REPLACE INTO part_sightings (run_id, node, kind, slot, serial, seen_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def _sightings(self, where: str, args: tuple[object, ...]) -> list[PartSighting]:
        rows = self._all(_SIGHTINGS + where + " ORDER BY p.seen_at, p.node, p.kind, p.slot", args)
        return [
            PartSighting(
                run_id=r["run_id"],
                node=r["node"],
                kind=r["kind"],
                slot=r["slot"],
                serial=r["serial"],
                seen_at=r["seen_at"],
                verdict=r["verdict"],
                failed_checks=tuple(r["failed"].split(",")) if r["failed"] else (),
            )
            for r in rows
        ]

    def serial_history(self, serial: str) -> list[PartSighting]:
        """Every finished-run sighting of a serial, oldest first, with the node's verdict in that run."""
        return self._sightings(" AND p.serial = ?", (serial,))

    def serial_failures(self, serial: str) -> list[PartSighting]:
        """Sightings of a serial in runs where its node did not pass."""
        return [s for s in self.serial_history(serial) if s.verdict in ("fail", "error")]

    def node_parts(self, node: str) -> list[PartSighting]:
        return self._sightings(" AND p.node = ?", (node,))

    def current_parts(self, node: str) -> dict[tuple[str, int], str]:
        """(kind, slot) → serial as last seen in a finished run."""
        out: dict[tuple[str, int], str] = {}
        for s in self.node_parts(node):
            out[(s.kind, s.slot)] = s.serial
        return out

    def node_swaps(self, node: str) -> list[Swap]:
        """Slots of `node` whose serial changed between two finished runs, oldest first."""
        last: dict[tuple[str, int], PartSighting] = {}
        swaps: list[Swap] = []
        for s in self.node_parts(node):
            key = (s.kind, s.slot)
            prev = last.get(key)
            if prev is not None and prev.serial != s.serial:
                swaps.append(
                    Swap(
                        node=node,
                        kind=s.kind,
                        slot=s.slot,
                        old_serial=prev.serial,
                        new_serial=s.serial,
                        last_seen_old=prev.seen_at,
                        first_seen_new=s.seen_at,
                        run_id=s.run_id,
                    )
                )
            last[key] = s
        return swaps

    def repeat_offenders(self, min_failures: int = 2, kind: str | None = None) -> list[Offender]:
        """Serials present in a failing node in at least `min_failures` distinct finished runs."""
        where = " AND n.verdict IN ('fail', 'error')"
        args: tuple[object, ...] = ()
        if kind is not None:
            where += " AND p.kind = ?"
            args = (kind,)
        by_serial: dict[str, list[PartSighting]] = {}
        for s in self._sightings(where, args):
            by_serial.setdefault(s.serial, []).append(s)
        out = []
        for serial, seen in by_serial.items():
            runs = tuple(dict.fromkeys(s.run_id for s in seen))
            if len(runs) >= min_failures:
                out.append(
                    Offender(
                        serial=serial,
                        kind=seen[0].kind,
                        failures=len(runs),
                        nodes=tuple(dict.fromkeys(s.node for s in seen)),
                        runs=runs,
                    )
                )
        return sorted(out, key=lambda o: (-o.failures, o.serial))
