"""Storage in burn-in: fio sequential read and write on the node's storage targets, every iteration.

The runs are the full tier's (`clusterforge.remote.fio_jobs`: the same fio arguments, sized by the spec's
``storage.io_test``), each under the suite's timeout wrapper. A target is a unit (component
``storage:<name>``: ``storage:scratch`` or a shared mount's name), measured in GB/s (fio's ``bw_bytes`` /
10^9), so fleet outlier detection and the target's floors (``seq_read_gbs``, ``seq_write_gbs``) apply to it as
to every other performance measurement (`burnin.verdicts`).

Targets: scratch, and each shared mount that declares an fio floor (``seq_read_gbs``, ``seq_write_gbs`` or
``randread_iops``), the same opt-in as the full tier's: a shared filesystem is shared by the whole fleet,
so burn-in loads only those the site asked to have measured. Every node's script runs at once, so a
shared mount's figure is the node's share under fleet-wide load; the fleet comparison still names a node
that gets much less than its peers.

A missing fio, an unmounted target, a timeout or a fio job error measured nothing: an error naming fio
(`burnin.unmeasured`), never a hardware fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clusterforge.burnin.model import Measurement
from clusterforge.burnin.unmeasured import RC_TIMEOUT, not_run, unmeasured, why_unmeasured
from clusterforge.hw import ParseError, fio
from clusterforge.plan.desired_storage import io_targets
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.fio_jobs import (
    FIO_KINDS,
    NOT_MOUNTED,
    RC_NOT_MOUNTED,
    fio_args,
    fio_cmd,
    fio_timeout,
)
from clusterforge.remote.tools import missing

if TYPE_CHECKING:
    from clusterforge.burnin.suite import Section

KINDS = ("seq_read", "seq_write")
TESTS = {f"fio.{k}": k for k in KINDS}  # burn-in test -> fio kind
PREFIX = "storage:"
#: a shared mount is measured when it declares one of these floors (scratch always is)
OPT_IN = tuple(FIO_KINDS[k][3] for k in FIO_KINDS)


def targets(storage: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The targets burn-in measures in a node's desired storage: scratch, and the shared mounts with an fio
    floor."""
    return [
        t
        for t in io_targets(dict(storage or {}))
        if t["name"] == "scratch" or any(k in t["floors"] for k in OPT_IN)
    ]


def _key(kind: str, name: str) -> str:
    return f"fio.{kind}.{name}"


def steps(node: NodeExpect) -> list[tuple[str, int, str]]:
    """(section key, timeout s, command): fio seq read and write on each target; none without storage."""
    st = node.desired_state.get("storage") or {}
    if not st:
        return []
    io = st["io_test"]
    return [
        (_key(kind, t["name"]), fio_timeout(io), fio_cmd(t["target"], fio_args(kind, io, t["direct"])))
        for t in targets(st)
        for kind in KINDS
    ]


def measurements(
    node: NodeExpect, sections: Mapping[str, Section], limit: Mapping[str, float], versions: dict[str, str]
) -> list[Measurement]:
    """One measurement per target and kind; ``versions`` gains fio's version when it ran."""
    out = []
    for t in targets(node.desired_state.get("storage")):
        for kind in KINDS:
            key = _key(kind, t["name"])
            out.append(_one(node.name, t, kind, sections.get(key), limit.get(key), versions))
    return out


def _one(
    node: str,
    t: Mapping[str, Any],
    kind: str,
    sec: Section | None,
    limit: float | None,
    versions: dict[str, str],
) -> Measurement:
    test, comp = f"fio.{kind}", PREFIX + str(t["name"])
    detail = {"target": t["target"]}
    tool = None if sec is None else missing("fio", sec.rc, sec.out, sec.err)
    if tool is not None:
        return not_run(test, node, tool, comp)
    if sec is not None and sec.rc == RC_NOT_MOUNTED and NOT_MOUNTED in sec.err:
        return unmeasured(
            test, node, "fio", f"not run: {t['target']} is not a mount point", comp, detail=detail
        )
    try:
        res = fio.parse(sec.out) if sec is not None and sec.out.strip() else None
    except ParseError:
        res = None
    if sec is None:
        why = why_unmeasured(None, "", "", False)
    else:
        why = why_unmeasured(sec.rc, sec.out, sec.err, res is not None and not res.errors, limit)
        if res is not None and res.errors and sec.rc not in RC_TIMEOUT:
            why = f"reported job errors on {t['target']}: {res.errors}"
    if why:
        return unmeasured(test, node, "fio", why, comp, detail=detail)
    assert res is not None
    versions["fio"] = res.version
    io = res.total("write" if kind == "seq_write" else "read")
    return Measurement(
        test,
        node,
        comp,
        value=round(io.bw_bytes / 1e9, 4),
        unit="GB/s",
        detail=detail | {"bytes": io.io_bytes, "runtime_ms": io.runtime_ms, "fio": res.version},
    )


# -- what the verdicts need from the plan --------------------------------------------------------------------
def _target(plan_node: Mapping[str, Any], component: str) -> dict[str, Any] | None:
    name = component.removeprefix(PREFIX)
    st = (plan_node.get("desired") or {}).get("storage")
    return next((t for t in io_targets(st) if t["name"] == name), None)


def floor(plan_node: Mapping[str, Any], test: str, component: str) -> float | None:
    """The target's floor for ``test`` (``seq_read_gbs`` / ``seq_write_gbs``), None when it declares none."""
    t = _target(plan_node, component)
    v = (t or {}).get("floors", {}).get(FIO_KINDS[TESTS[test]][3])
    return float(v) if v is not None else None


def judged_on_variation(component: str) -> bool:
    """Run-to-run variation is the node's own only on its scratch: a shared filesystem's figure moves with the
    whole fleet's load on the shared back end (every node's script runs at once), so a shared target is
    judged against its floors and its peers, never as unstable (on the lab's JuiceFS 6-68 % between
    iterations on healthy nodes)."""
    return component == f"{PREFIX}scratch"


def label(plan_node: Mapping[str, Any], component: str) -> str:
    """``scratch /raid``, ``lustre /lustre``: the target's name and mount point."""
    t = _target(plan_node, component)
    name = component.removeprefix(PREFIX)
    return f"{name} {t['target']}" if t else name


def fleet_class(test: str, component: str, sku: str) -> str:
    """Units compared with each other: the same test on the same target of nodes of the same SKU (the same
    drives, the same storage NICs)."""
    return f"{test} | {component} | SKU {sku}"
