"""OpenSM configuration for an InfiniBand compute fabric of the plan: opensm.conf (routing, LMC, SM priority,
partitions, QoS), partitions.conf, qos-policy.conf and - when the switches' GUIDs are known from a discovery -
the fat-tree root GUID file.

Option names and semantics are OpenSM's (linux-rdma/opensm, commit fa74b98c4b60):
- `routing_engine` takes a comma list tried in order; all failing, OpenSM falls back to min-hop
  (man/opensm.8.in, -R). `ftree` is for a symmetrical or almost symmetrical fat-tree, `updn` for one that
  is not pure (doc/current-routing.txt), so a planned fat-tree gets ``ftree,updn``; a single switch tier
  (no tree) keeps min-hop.
- `root_guid_file`: with it, ftree no longer needs a pure fat-tree, only all compute nodes at one rank;
  without it the topology must be a pure fat-tree (doc/current-routing.txt). The roots are the plan's top
  tier (spines in a 2-tier fabric, cores in a 3-tier one): root switches have no up-going ports.
- `lmc 0`: "LMC > 0 is not supported by fat-tree routing" (doc/current-routing.txt).
- `sm_priority` 0..15, default 0 (include/opensm/osm_base.h OSM_DEFAULT_SM_PRIORITY); the highest wins
  the master election, so the primary SM gets 15 and a standby less.
- partitions.conf: without a rule for the Default partition (0x7fff) end ports only get limited
  membership; the plan has no tenants' P_Keys (the spec has no partitions), so the one partition is
  ``Default=0x7fff,ipoib,defmember=full : ALL=full, ALL_SWITCHES=full, SELF=full ;``
  (doc/partition-config.txt).
- QoS (qos, qos_*_sl2vl, vlarb, qos_policy_file): switchcfg/ib.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterforge.switchcfg.ib import render_ib_qos
from clusterforge.switchcfg.policy import fabric_doc

CONFIG_DIR = "/etc/opensm"
PRIMARY_SM_PRIORITY = 15
DEFAULT_PKEY = "0x7fff"
LMC = 0


def top_tier(fabric: dict[str, Any]) -> list[str]:
    """The plan's top-tier switches of `fabric` (its fat-tree roots): cores, else spines; none for a
    single tier."""
    fields = fabric["switch_fields"]
    roles: dict[str, list[str]] = {}
    for s in fabric["switches"]:
        sw = dict(zip(fields, s, strict=True))
        roles.setdefault(str(sw["role"]), []).append(str(sw["name"]))
    return roles.get("core") or roles.get("spine") or []


def routing_engine(fabric: dict[str, Any]) -> str:
    return "ftree,updn" if top_tier(fabric) else "minhop"


def partitions_conf(fabric: str, cluster: str) -> str:
    return (
        f"# clusterforge: partitions of InfiniBand fabric {fabric} (cluster {cluster}); the spec declares\n"
        "# no tenant partitions: every port is a full member of the default partition, which carries IPoIB\n"
        f"Default={DEFAULT_PKEY},ipoib,defmember=full : ALL=full, ALL_SWITCHES=full, SELF=full ;\n"
    )


def render_opensm(
    plan_doc: dict[str, Any],
    fabric: str,
    *,
    root_guids: Mapping[str, str] | None = None,
    sm_priority: int = PRIMARY_SM_PRIORITY,
    config_dir: str = CONFIG_DIR,
) -> dict[str, str]:
    """{file name: text} for the SM of InfiniBand fabric `fabric`. ``root_guids`` (switch name -> node GUID,
    e.g. from an `ibnetdiscover` of the built fabric) adds root_guids.conf with the top tier's GUIDs;
    ValueError when it lacks one of them, or for a priority outside 0..15."""
    f = fabric_doc(plan_doc, fabric)
    if f["type"] != "infiniband":
        raise ValueError(f"fabric {fabric!r} is {f['type']}: no subnet manager")
    if not 0 <= sm_priority <= 15:
        raise ValueError(f"sm_priority {sm_priority} is not 0..15")
    qos = render_ib_qos(plan_doc, fabric)
    roots = top_tier(f)
    lines = [
        f"# clusterforge: OpenSM options for InfiniBand fabric {fabric} (cluster {plan_doc['cluster']},"
        f" plan {plan_doc['plan_hash'][:12]})",
        f"routing_engine {routing_engine(f)}",
        f"lmc {LMC}",
        f"sm_priority {sm_priority}",
        f"partition_config_file {config_dir}/partitions.conf",
        f"qos_policy_file {config_dir}/qos-policy.conf",
    ]
    files = {
        "partitions.conf": partitions_conf(fabric, plan_doc["cluster"]),
        "qos-policy.conf": qos["qos-policy.conf"],
    }
    if root_guids is not None and roots:
        missing = [r for r in roots if r not in root_guids]
        if missing:
            raise ValueError(f"no GUID for top-tier switches {', '.join(missing[:4])} in the discovery")
        lines.append(f"root_guid_file {config_dir}/root_guids.conf")
        files["root_guids.conf"] = "".join(f"{root_guids[r]}\n" for r in roots)
    elif roots:
        lines.append(
            "# root_guid_file: not set (no discovery given): ftree then needs a pure fat-tree, as planned"
        )
    files["opensm.conf"] = "\n".join(lines) + "\n" + qos["opensm.conf"]
    return files
