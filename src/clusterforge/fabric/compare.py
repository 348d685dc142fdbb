"""Compare the plan's links with the observed ones: ok, swapped pair, wrong port, wrong device, missing,
degraded, extra link, unexpected device. Pure: the same inputs give the same findings, in plan order.

A swap is two cables whose observed far ends are exchanged (A sees B2 and A2 sees B); the fix names the
side where both plugs sit on one device (two rails of one node, two ports of one leaf), else the lower
tier's side. A link is compared only where the discovery covers it: its fabric was read whole (an
InfiniBand subnet view) or one of its devices reported its own neighbours (LLDP); the others are counted
as unchecked, and each planned device the discovery never reports is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from clusterforge.fabric.model import End, ExpectedLink, FabricReport, Finding, ObservedLink


@dataclass(frozen=True)
class Coverage:
    whole_fabrics: frozenset[str] = frozenset()  # compute fabrics read whole (ibnetdiscover/iblinkinfo)
    devices: frozenset[str] = frozenset()  # devices that reported their own neighbours (LLDP files)
    errors: tuple[str, ...] = field(default=())

    def covers(self, e: ExpectedLink) -> bool:
        return e.fabric in self.whole_fabrics or e.a.device in self.devices or e.b.device in self.devices


def _index(observed: Iterable[ObservedLink]) -> dict[End, list[tuple[End, ObservedLink]]]:
    seen: dict[End, list[tuple[End, ObservedLink]]] = {}
    for o in observed:
        for x, y in ((o.a, o.b), (o.b, o.a)):
            peers = seen.setdefault(x, [])
            if all(p != y for p, _ in peers):
                peers.append((y, o))
    return seen


def _where(e: ExpectedLink, end: End) -> str:
    return e.describe_end(end)


def _obs_str(end: End, owner: ExpectedLink | None) -> str:
    if owner is not None:
        return owner.describe_end(end)
    return f"{end.device} {end.port}"


def compare(
    expected: Sequence[ExpectedLink],
    observed: Sequence[ObservedLink],
    coverage: Coverage,
    known_devices: Iterable[str],
    *,
    cluster: str = "",
    plan_hash: str = "",
    source: str = "",
) -> FabricReport:
    obs = _index(observed)
    owner: dict[End, ExpectedLink] = {}
    for e in expected:
        owner[e.a] = e
        owner[e.b] = e
    report = FabricReport(cluster, plan_hash, source, len(expected), 0, 0, errors=list(coverage.errors))
    accounted: set[frozenset[End]] = set()
    swapped: set[str] = set()

    def first(end: End) -> End | None:
        peers = obs.get(end)
        return peers[0][0] if peers else None

    for e in expected:
        if not coverage.covers(e):
            continue
        report.checked += 1
        peers_a = [p for p, _ in obs.get(e.a, [])]
        if e.b in peers_a:
            accounted.add(frozenset((e.a, e.b)))
            o = next(ol for p, ol in obs[e.a] if p == e.b)
            problem = _degraded(e, o)
            if problem:
                report.findings.append(problem)
            else:
                report.ok += 1
            continue
        if e.cable_id in swapped:
            continue
        oa, ob = first(e.a), first(e.b)
        if oa is None and ob is None:
            report.findings.append(
                Finding(
                    "missing",
                    e.kind,
                    (e.cable_id,),
                    (e.a.device, e.b.device),
                    f"cable {e.describe()}: no link seen at either end",
                    f"connect cable {e.cable_id}: {_where(e, e.a)} to {_where(e, e.b)}; "
                    "check both plugs and the cable",
                )
            )
            continue
        if oa is None:
            assert ob is not None
            report.findings.append(
                Finding(
                    "missing",
                    e.kind,
                    (e.cable_id,),
                    (e.a.device, e.b.device),
                    f"cable {e.describe()}: nothing at {_where(e, e.a)}; {_where(e, e.b)} reaches "
                    f"{_obs_str(ob, owner.get(ob))} instead",
                    f"connect {_where(e, e.a)} to {_where(e, e.b)} (cable {e.cable_id})",
                )
            )
            accounted.add(frozenset((e.b, ob)))
            continue
        e2 = owner.get(oa)
        if e2 is not None and e2 is not e:
            far2 = e2.other(oa)
            if first(far2) == e.b:
                report.findings.append(_swap(e, e2, oa, far2))
                swapped.update((e.cable_id, e2.cable_id))
                accounted.update((frozenset((e.a, oa)), frozenset((far2, e.b))))
                continue
        accounted.add(frozenset((e.a, oa)))
        found = _obs_str(oa, e2)
        if oa.device == e.b.device:
            report.findings.append(
                Finding(
                    "wrong_port",
                    e.kind,
                    (e.cable_id,),
                    (e.a.device, e.b.device),
                    f"cable {e.describe()}: {_where(e, e.a)} reaches {found} instead",
                    f"move the plug at {found} to {_where(e, e.b)} (cable {e.cable_id})",
                )
            )
        else:
            report.findings.append(
                Finding(
                    "wrong_device",
                    e.kind,
                    (e.cable_id,),
                    (e.a.device, e.b.device, oa.device),
                    f"cable {e.describe()}: {_where(e, e.a)} reaches {found} instead of {e.b.device}",
                    f"re-cable {_where(e, e.a)} to {_where(e, e.b)} (cable {e.cable_id})",
                )
            )
    report.findings.extend(_extras(observed, accounted, owner, coverage, set(known_devices)))
    return report


def _swap(e: ExpectedLink, e2: ExpectedLink, oa: End, far2: End) -> Finding:
    """e (A-B) and e2 (A2-B2) observed as A-B2 and A2-B."""
    a, a2, b, b2 = e.a, far2, e.b, oa
    if a.device == a2.device or b.device != b2.device:
        side = (e.describe_end(a), e2.describe_end(a2))
    else:
        side = (e.describe_end(b), e2.describe_end(b2))
    msg = (
        f"cables {e.describe()} and {e2.describe()} are swapped: {e.describe_end(a)} reaches "
        f"{e2.describe_end(b2)} and {e2.describe_end(a2)} reaches {e.describe_end(b)}"
    )
    devices = tuple(dict.fromkeys((a.device, a2.device, b.device, b2.device)))
    kind = e.kind if e.kind == e2.kind else f"{e.kind}/{e2.kind}"
    return Finding(
        "swapped",
        kind,
        (e.cable_id, e2.cable_id),
        devices,
        msg,
        f"swap the cables at {side[0]} and {side[1]}",
    )


def _degraded(e: ExpectedLink, o: ObservedLink) -> Finding | None:
    slow = o.speed_gbps is not None and o.speed_gbps < e.speed_gbps
    narrow = bool(e.width and o.width and o.width.lower() != e.width.lower())
    if not (slow or narrow):
        return None
    got = (
        f"{o.width or '?'} {o.speed_gbps:g} Gb/s"
        if o.speed_gbps is not None
        else f"{o.width} (speed not reported)"
    )
    return Finding(
        "degraded",
        e.kind,
        (e.cable_id,),
        (e.a.device, e.b.device),
        f"cable {e.describe()}: link up at {got}, plan says {e.width or ''} {e.speed_gbps} Gb/s".replace(
            "  ", " "
        ),
        f"reseat or replace cable {e.cable_id} and its transceivers; check both ports' speed/width settings",
    )


def _extras(
    observed: Sequence[ObservedLink],
    accounted: set[frozenset[End]],
    owner: dict[End, ExpectedLink],
    coverage: Coverage,
    known: set[str],
) -> list[Finding]:
    out: list[Finding] = []
    strangers: dict[str, list[str]] = {}
    done: set[frozenset[End]] = set()
    for o in observed:
        key = frozenset((o.a, o.b))
        if key in accounted or key in done:
            continue
        done.add(key)
        for end in (o.a, o.b):
            if end.device not in known:
                strangers.setdefault(end.device, []).append(
                    f"{o.a.device} {o.a.port} <-> {o.b.device} {o.b.port}"
                )
        ea, eb = owner.get(o.a), owner.get(o.b)
        if ea is None and eb is None and o.a.device in known and o.b.device in known:
            out.append(
                Finding(
                    "extra",
                    "",
                    (),
                    (o.a.device, o.b.device),
                    f"link {o.a.device} {o.a.port} <-> {o.b.device} {o.b.port} "
                    f"is not in the plan [{o.source}]",
                    "remove the cable, or add it to the plan",
                )
            )
        elif (ea is None) != (eb is None):
            e = ea or eb
            assert e is not None
            mine = o.a if ea else o.b
            if not coverage.covers(e):
                continue
            there = o.b if ea else o.a
            out.append(
                Finding(
                    "extra",
                    "",
                    (e.cable_id,),
                    (mine.device, there.device),
                    f"link {e.describe_end(mine)} <-> {there.device} {there.port} is not in the plan "
                    f"(the port belongs to cable {e.cable_id}) [{o.source}]",
                    f"remove the cable at {e.describe_end(mine)}",
                )
            )
    for dev, links in sorted(strangers.items()):
        shown = "; ".join(links[:3]) + (f"; and {len(links) - 3} more" if len(links) > 3 else "")
        out.append(
            Finding(
                "unexpected_device",
                "",
                (),
                (dev,),
                f"device {dev!r} is not in the plan ({len(links)} link(s): {shown})",
                "remove it, rename it to its planned name (IB node description / LLDP system name), "
                "or add it to the plan",
            )
        )
    return out
