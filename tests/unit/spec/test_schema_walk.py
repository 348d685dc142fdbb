"""Every field of the spec does something or is rejected: a walk over the spec's pydantic models
(spec/model.py and the SKU model it embeds, recursively) that fails on any field nothing reads.

Each field's dotted path (`software.rdma.stack`, `pools[].nodes[].bmc.vendor`; `*` for any name of a
mapping or of the SKU's threshold records) must be in exactly one table:

* CONSUMERS: the module or role that reads it and a piece of its source that reads it (checked: the text
  must be in that file, so renaming or dropping the read fails the test);
* NO_BEHAVIOUR: fields that are by design not read (a format tag, a one-value choice, provenance notes),
  with the reason;
* KNOWN_GAPS: fields read only by the lab simulator or exported only, not applied or certified on a real
  node (issue 15 leftovers, named so they are not forgotten; removing one here forces a consumer).

A field added to the model without an entry fails `test_every_field_has_a_consumer_or_a_reason`; the walk
itself is checked on a model with an extra field (`test_walk_finds_a_new_field`).
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

from pydantic import BaseModel, create_model

from clusterforge.spec.model import Cluster, Software

REPO = Path(__file__).resolve().parents[3]
SRC = "src/clusterforge/"
PLAN, DESIRED, INV, CHECKS = (
    SRC + "plan/build.py",
    SRC + "plan/desired.py",
    SRC + "plan/inventory.py",
    SRC + "spec/checks.py",
)
LAYOUT, CABLING, SITE = SRC + "spec/layout.py", SRC + "plan/cabling.py", SRC + "plan/site_layout.py"
NETS = SRC + "pulumi/networks.py"
STOR, STOR_V = SRC + "plan/desired_storage.py", "validators/test_storage.py"
FIO_JOBS = SRC + "remote/fio_jobs.py"  # the fio command lines of the full tier and burn-in
COUNTERS = SRC + "spec/counter_policy.py"  # the link-counter policy merged with the spec's overrides
# the management network compiled into the desired state, certified by validators/test_network.py
MGMT_NET = SRC + "plan/desired_network.py"

CONSUMERS: dict[str, tuple[str, str]] = {
    "kind": ("src/clusterforge/spec/load.py", "kind"),
    "metadata.name": (PLAN, '"cluster": c.metadata.name'),
    "metadata.description": (PLAN, '"description": c.metadata.description'),
    "target": (INV, 'group_name("target", doc["target"]'),
    "pool_manager": (INV, '"clusterforge_pool_manager"'),
    "pools[].name": (LAYOUT, "pool.name"),
    "pools[].sku": (PLAN, "spec.skus[p.sku]"),
    "pools[].count": (LAYOUT, "range(1, pool.count + 1)"),
    "pools[].naming": (LAYOUT, "pool.naming.format(index=i)"),
    "pools[].fabric": (PLAN, '"fabric": p.fabric'),
    "pools[].nodes[].name": (PLAN, "entry"),
    "pools[].nodes[].bmc.address": (SRC + "plan/bios_vars.py", "bmc"),
    "pools[].nodes[].bmc.vendor": (SRC + "plan/bios_vars.py", 'n["bmc"]["vendor"]'),
    "pools[].nodes[].macs": (PLAN, "macs = entry.macs"),
    "pools[].nodes[].management_ip": (SRC + "plan/addressing.py", "n.management_ip"),
    "site.name": (PLAN, '"name": c.site.name'),
    "site.racks.count": (CHECKS, "racks.count * racks.nodes_per_rack"),
    "site.racks.nodes_per_rack": (CHECKS, "racks.count * racks.nodes_per_rack"),
    "site.racks.power_kw": (CHECKS, "racks.power_kw"),
    "site.racks.naming": (LAYOUT, "cluster.site.racks.naming.format"),
    "site.cabling.racks_per_row": (SITE, "pol.racks_per_row"),
    "site.cabling.rack_units": (SITE, "rack_units"),
    "site.cabling.node_height_u": (SITE, "pol.node_height_u"),
    "site.cabling.first_node_u": (SITE, "pol.first_node_u"),
    "site.cabling.rack_width_m": (SITE, "pol.rack_width_m"),
    "site.cabling.row_pitch_m": (SITE, "pol.row_pitch_m"),
    "site.cabling.tray_rise_m": (SITE, "pol.tray_rise_m"),
    "site.cabling.slack_m": (SITE, "pol.slack_m"),
    "site.cabling.switches_per_network_rack": (SITE, "pol.switches_per_network_rack"),
    "site.cabling.compute_nic_connector": (CABLING, "pol.compute_nic_connector"),
    "site.cabling.storage_nic_connector": (CABLING, "pol.storage_nic_connector"),
    "site.cabling.management_switch": (CABLING, "pol.management_switch"),
    "site.cabling.bmc_switch": (CABLING, "pol.bmc_switch"),
    "site.cabling.storage_switch": (CABLING, "pol.storage_switch"),
    "site.cabling.spares.percent": (SRC + "plan/bom.py", "sp.percent"),
    "site.cabling.spares.minimum": (SRC + "plan/bom.py", "sp.minimum"),
    "site.cabling.spares.switches_percent": (SRC + "plan/bom.py", "sp.switches_percent"),
    "fabrics.compute[].name": (PLAN, "fabrics_spec[name]"),
    "fabrics.compute[].type": (INV, '"clusterforge_fabric_type"'),
    "fabrics.compute[].switch.model": (PLAN, "fs.switch.model"),
    "fabrics.compute[].switch.radix": (PLAN, "radix=fs.switch.radix"),
    "fabrics.compute[].switch.port_speed_gbps": (PLAN, "port_speed_gbps=fs.switch.port_speed_gbps"),
    "fabrics.compute[].oversubscription": (PLAN, "oversubscription=fs.ratio"),
    "fabrics.compute[].su_size": (PLAN, "su_size=fs.su_size"),
    "fabrics.compute[].max_tiers": (PLAN, "fab.tiers > fs.max_tiers"),
    "fabrics.storage.speed_gbps": (CABLING, "st.speed_gbps"),
    "fabrics.storage.nics_per_node": (CABLING, "st.nics_per_node"),
    "fabrics.storage.mtu": (NETS, 'int(net.get("mtu", 0))'),
    "fabrics.storage.vlan": (NETS, '"vlan": net.get("vlan")'),
    "fabrics.storage.lossless": (STOR, 'if net.get("lossless") and qos is not None'),
    "fabrics.management.speed_gbps": (MGMT_NET, 'int(network["speed_gbps"])'),  # also the BOM's ports
    "fabrics.management.nics_per_node": (CABLING, "mg.nics_per_node"),
    "fabrics.management.mtu": (MGMT_NET, 'int(network["mtu"])'),
    "fabrics.management.vlan": (NETS, '"vlan": net.get("vlan")'),
    "addressing.management": (PLAN, "c.addressing.management"),
    "addressing.storage": (PLAN, "Allocator(c.addressing.storage"),
    "addressing.compute": (PLAN, "c.addressing.compute.get(f"),
    "addressing.reserved": (PLAN, "c.addressing.reserved"),
    "addressing.gateway": (PLAN, "str(c.addressing.gateway) if c.addressing.gateway is not None"),
    "software.nvidia_driver.branch": (
        SRC + "plan/desired_software.py",
        'str(software["nvidia_driver"]["branch"])',
    ),
    "software.nvidia_driver.version": (
        SRC + "plan/desired_software.py",
        'str(software["nvidia_driver"]["version"])',
    ),
    "software.cuda": (SRC + "plan/desired_software.py", 'cuda = str(software["cuda"])'),
    "software.nccl": (SRC + "plan/desired_software.py", "software['nccl']"),
    "software.dcgm": (SRC + "plan/desired_software.py", 'str(software["dcgm"])'),
    "software.dcgm_exporter": (SRC + "plan/desired_monitoring.py", 'str(software["dcgm_exporter"])'),
    "software.rdma.stack": (SRC + "plan/desired.py", 'rdma.get("stack")'),
    "software.rdma.version": ("validators/test_software.py", 'str(pin["version"])'),
    "software.nic_firmware": ("validators/test_software.py", 'node.pins["nic_firmware"]'),
    "software.vbios": ("validators/test_software.py", 'node.pins["vbios"]'),
    "software.bios": (SRC + "certify/redfish.py", 'node.pins["bios"]'),
    "software.*.version": (SRC + "plan/desired_software.py", '"version": str(pin["version"])'),
    "software.*.install": (
        SRC + "plan/desired_software.py",
        'install = str(pin.get("install") or "package")',
    ),
    "software.*.package": ("validators/test_benchmarks.py", 'pin.get("package")'),
    "software.*.url": (SRC + "plan/desired_software.py", '"url": _opt(pin.get("url"))'),
    "software.*.sha256": (SRC + "plan/desired_software.py", '"sha256": _opt(pin.get("sha256"))'),
    # storage (issue 22): compiled in plan/desired_storage.py, floors certified by validators/test_storage.py
    "storage.shared[].name": (STOR, '"name": fs["name"]'),
    "storage.shared[].type": (STOR, 'kind = str(fs["type"])'),
    "storage.shared[].servers": (STOR, 'servers = list(fs["servers"])'),
    "storage.shared[].export": (STOR, "fs['export']"),
    "storage.shared[].metadata": (STOR, 'source = str(fs["metadata"])'),
    "storage.shared[].mountpoint": (STOR, '"target": fs["mountpoint"]'),
    "storage.shared[].options": (STOR, 'opts = ["_netdev", *fs["options"]]'),
    "storage.shared[].network": (STOR, 'if fs["network"] == "storage"'),
    "storage.shared[].transport": (STOR, 'fs["transport"] == "rdma"'),
    "storage.shared[].nconnect": (STOR, "nconnect={fs['nconnect']}"),
    "storage.shared[].client_url": (STOR, 'juicefs["client_url"]'),
    "storage.shared[].client_sha256": (STOR, 'juicefs["client_sha256"]'),
    "storage.shared[].floors.seq_read_gbs": (STOR_V, '"seq_read_gbs"'),
    "storage.shared[].floors.seq_write_gbs": (STOR_V, '"seq_write_gbs"'),
    "storage.shared[].floors.randread_iops": (STOR_V, '"randread_iops"'),
    "storage.shared[].floors.checkpoint_write_gbs": (STOR_V, '"checkpoint_write_gbs"'),
    "storage.shared[].floors.min_free_gib": (STOR_V, '"min_free_gib"'),
    "storage.scratch.devices": (STOR, '"devices": list(sc["devices"])'),
    "storage.scratch.raid": (STOR, 'raid = sc["raid"] == 0'),
    "storage.scratch.filesystem": (STOR, '"filesystem": sc["filesystem"]'),
    "storage.scratch.mountpoint": (STOR, '"target": sc["mountpoint"]'),
    "storage.scratch.options": (STOR, '"options": list(sc["options"])'),
    "storage.scratch.floors.seq_read_gbs": (STOR_V, '"seq_read_gbs"'),
    "storage.scratch.floors.seq_write_gbs": (STOR_V, '"seq_write_gbs"'),
    "storage.scratch.floors.randread_iops": (STOR_V, '"randread_iops"'),
    "storage.scratch.floors.checkpoint_write_gbs": (STOR_V, '"checkpoint_write_gbs"'),
    "storage.scratch.floors.min_free_gib": (STOR_V, '"min_free_gib"'),
    "storage.gds": (STOR, 'bool(spec.get("gds"))'),
    "storage.io_test.size_gib": (FIO_JOBS, 'io["size_gib"]'),
    "storage.io_test.runtime_s": (FIO_JOBS, 'io["runtime_s"]'),
    "storage.io_test.checkpoint_gib": (FIO_JOBS, 'io["checkpoint_gib"]'),
    "storage.floors_by_sku.*.*.seq_read_gbs": (STOR, 'spec.get("floors_by_sku", {}).get(sku["name"], {})'),
    "storage.floors_by_sku.*.*.seq_write_gbs": (STOR, 'spec.get("floors_by_sku", {}).get(sku["name"], {})'),
    "storage.floors_by_sku.*.*.randread_iops": (STOR, 'spec.get("floors_by_sku", {}).get(sku["name"], {})'),
    "storage.floors_by_sku.*.*.checkpoint_write_gbs": (
        STOR,
        'spec.get("floors_by_sku", {}).get(sku["name"], {})',
    ),
    "storage.floors_by_sku.*.*.min_free_gib": (STOR, 'spec.get("floors_by_sku", {}).get(sku["name"], {})'),
    "software.repositories.apt_proxy": (INV, '"repositories_apt_proxy"'),
    "software.repositories.no_proxy": (INV, '"repositories_no_proxy"'),
    "software.repositories.distribution_mirror": (INV, '"distribution_mirror"'),
    "software.repositories.security_mirror": (INV, '"security_mirror"'),
    "software.repositories.*.url": (INV, 'r["url"]'),
    "software.repositories.*.suite": (INV, 'r.get("suite"'),
    "software.repositories.*.components": (INV, 'r.get("components"'),
    "software.repositories.*.key_url": (INV, 'r.get("key_url"'),
    "software.repositories.*.trusted": (INV, "_repo_trusted"),
    "tuning.hugepages.size": (DESIRED, 'hp["size"]'),
    "tuning.hugepages.count": (DESIRED, 'hp["count"]'),
    "tuning.hugepages.per_numa": (DESIRED, 'hp.get("per_numa")'),
    "tuning.cstate_max": (DESIRED, "tuning['cstate_max']"),
    "tuning.governor": (DESIRED, 'tuning["governor"]'),
    "tuning.thp": (DESIRED, 'tuning["thp"]'),
    "tuning.numa_balancing": (DESIRED, 'tuning["numa_balancing"]'),
    "tuning.iommu": (DESIRED, 'tuning["iommu"]'),
    "tuning.tuned_profile": (DESIRED, 'tuning.get("tuned_profile")'),
    "tuning.irqbalance": (DESIRED, 'tuning["irqbalance"]'),
    "tuning.time_servers": ("src/clusterforge/plan/desired.py", 'tuning.get("time_servers", ())'),
    "tuning.acs_disable": (DESIRED, 'tuning["acs_disable"]'),
    "tuning.ecc": (INV, 't["ecc"]'),
    "tuning.mig": (INV, 't["mig"]'),
    "tuning.roce.lossless_priority": (DESIRED, 'q["lossless_priority"]'),
    "tuning.roce.dscp": (DESIRED, 'q["dscp"]'),
    "tuning.roce.cnp_dscp": (DESIRED, 'q["cnp_dscp"]'),
    "tuning.roce.cnp_priority": (DESIRED, 'q["cnp_priority"]'),
    "tuning.roce.mtu": (DESIRED, 'tuning["roce"]["mtu"]'),
    "tuning.roce.ecn": (DESIRED, 'q["ecn"]'),
    "tuning.roce.pfc_watchdog": (SRC + "switchcfg/nvue.py", "q.pfc_watchdog"),
    "rollout.serial": (INV, '"clusterforge_rollout_serial"'),
    "rollout.max_fail_percentage": (INV, '"clusterforge_rollout_max_fail_percentage"'),
    "certification.join_tiers": (SRC + "pool/admission.py", 'policy.get("join_tiers")'),
    "certification.thresholds": (PLAN, "spec.cluster.certification.thresholds"),
    "certification.validity_hours": (SRC + "certify/issue.py", 'node.certification.get("validity_hours"'),
    "certification.perf_attempts": (SRC + "plan/expect.py", 'self.certification.get("perf_attempts"'),
    "certification.check_timeout_s": (SRC + "plan/expect.py", 'self.certification.get("check_timeout_s"'),
    "certification.flap_window_hours": (SRC + "pool/admission.py", 'policy.get("flap_window_hours")'),
    "certification.dcgm_level": ("validators/test_performance.py", 'node.certification.get("dcgm_level"'),
    "certification.health_interval_s": (
        SRC + "plan/desired_monitoring.py",
        'int(certification["health_interval_s"])',
    ),
    # compiled per SKU into the desired state (plan/desired_counters.py calls spec/counter_policy.py)
    "certification.link_counters.window_s": (COUNTERS, 'site.get("window_s")'),
    "certification.link_counters.limits": (COUNTERS, 'site.get("limits")'),
    "certification.link_counters.skus.*.window_s": (COUNTERS, 'own.get("window_s")'),
    "certification.link_counters.skus.*.limits": (COUNTERS, 'own.get("limits")'),
    # the SKU (catalog entry, or one written inline under `skus`)
    "skus[].name": (SRC + "spec/load.py", ".name"),
    "skus[].node_power_kw": (CHECKS, "skus[p.sku].node_power_kw"),
    "skus[].gpu.model": ("validators/test_gpu.py", 'node.gpu["model"]'),
    "skus[].gpu.architecture": ("validators/test_gpu.py", 'node.gpu["architecture"]'),
    "skus[].storage_nics.speed_gbps": ("src/clusterforge/spec/checks.py", "net.speed_gbps > nics.speed_gbps"),
    "skus[].gpu.nvlink.generation": ("src/clusterforge/spec/sku.py", "NVLINK_LINK_GBS.get(nv.generation)"),
    "skus[].gpu.hbm_bandwidth_gbs": ("src/clusterforge/spec/sku.py", "floor > sku.gpu.hbm_bandwidth_gbs"),
    "skus[].compute_nics.firmware_prefix": (
        "src/clusterforge/spec/checks.py",
        "compute_nics.firmware_prefix",
    ),
    "skus[].gpu.power_limit_w": ("validators/test_gpu.py", 'node.gpu["power_limit_w"]'),
    "skus[].gpu.count": ("validators/test_gpu.py", 'node.gpu["count"]'),
    "skus[].gpu.memory_mib": ("validators/test_gpu.py", 'node.gpu["memory_mib"]'),
    "skus[].gpu.nvswitch": (INV, 'sku["gpu"]["nvswitch"]'),
    "skus[].gpu.nvlink.links_per_gpu": ("validators/test_gpu.py", 'nv["links_per_gpu"]'),
    "skus[].gpu.nvlink.topo_link": ("validators/test_gpu.py", 'node.gpu["nvlink"]["topo_link"]'),
    "skus[].gpu.nvlink.link_speed_gbs": ("validators/test_gpu.py", 'nv["link_speed_gbs"]'),
    "skus[].gpu.pcie.generation": ("validators/test_gpu.py", 'node.gpu["pcie"]["generation"]'),
    "skus[].gpu.pcie.width": ("validators/test_gpu.py", 'node.gpu["pcie"]["width"]'),
    "skus[].cpu.vendor": (DESIRED, 'sku.get("cpu", {}).get("vendor"'),
    "skus[].cpu.model": ("validators/test_inventory.py", '"model"'),
    "skus[].cpu.sockets": (SRC + "plan/slurm_files.py", 'cpu.get("sockets")'),
    "skus[].cpu.cores_per_socket": (SRC + "plan/slurm_files.py", 'cpu.get("cores_per_socket")'),
    "skus[].cpu.numa_nodes": (DESIRED, '.get("numa_nodes"'),
    "skus[].compute_nics.model": (SRC + "plan/bom.py", "model"),
    "skus[].compute_nics.part_id": ("validators/test_rdma.py", 'node.sku["compute_nics"].get("part_id")'),
    "skus[].compute_nics.speed_gbps": (PLAN, "nics.speed_gbps"),
    "skus[].compute_nics.link_layer": (DESIRED, 'rail["link_layer"]'),
    "skus[].compute_nics.rails[].rail": (PLAN, "r.rail"),
    "skus[].compute_nics.rails[].hca": (PLAN, "r.hca"),
    "skus[].compute_nics.rails[].netdev": (PLAN, "r.netdev"),
    "skus[].compute_nics.rails[].gpu": (PLAN, "r.gpu"),
    "skus[].compute_nics.rails[].numa": (PLAN, "r.numa"),
    "skus[].compute_nics.rails[].pci": (PLAN, '"pci": r.pci'),
    "skus[].compute_nics.rails[].gpu_link": (PLAN, '"gpu_link": r.gpu_link'),
    "skus[].storage_nics.count": (CHECKS, "nics.count"),
    "skus[].storage_nics.netdev": (CABLING, '["storage_nics"]["netdev"]'),
    "skus[].management_nic.count": (CHECKS, "nics.count"),
    "skus[].management_nic.netdev": (PLAN, "management_nic.netdev"),
    "skus[].management_nic.speed_gbps": (MGMT_NET, 'int(nic["speed_gbps"])'),
    "skus[].thresholds.*.value": (SRC + "plan/expect.py", 'float(t["value"])'),
    "skus[].thresholds.*.unit": (SRC + "plan/expect.py", 't.get("unit"'),
    "skus[].thresholds.*.source": (SRC + "plan/expect.py", 't.get("source"'),
    "skus[].thresholds.ib_error_counters_max": ("validators/test_rdma.py", '.get("ib_error_counters_max",'),
    "skus[].thresholds.ib_error_counters_source": ("validators/test_rdma.py", "ib_error_counters_source"),
    # multi-node NVLink domains: whole domains per pool, one rack each (spec checks), one Slurm block each
    "skus[].nvlink_domain.nodes": (SRC + "plan/slurm_files.py", 'get("nodes")'),
    "skus[].nvlink_domain.gpus": (SRC + "spec/sku.py", "dom.gpus != dom.nodes * sku.gpu.count"),
    "skus[].unverified": (SRC + "spec/checks_mgmt.py", "sku.unverified"),
}

ONE_VALUE = "one value is accepted"
NO_BEHAVIOUR: dict[str, str] = {
    "apiVersion": f"the document's format tag; {ONE_VALUE} (clusterforge/v1)",
    "fabrics.compute[].topology": f"{ONE_VALUE} (rail-optimized-fat-tree), the topology the planner builds",
    "fabrics.storage.type": f"{ONE_VALUE} (ethernet)",
    "fabrics.management.type": f"{ONE_VALUE} (ethernet)",
    "skus[].description": "a person's label of the SKU",
    "skus[].node_power_source": "provenance of node_power_kw (where the figure comes from), for people",
    "skus[].sources": "provenance of the SKU's figures, for people",
    "skus[].thresholds.*.marker": "provenance class of the threshold (verified/secondary/derived)",
    "skus[].nvlink_domain.source": "provenance of the NVLink domain's size, for people",
    "skus[].nvlink_domain.marker": "provenance class of the NVLink domain's size (verified/secondary/...)",
}

# empty since the management network is certified (issue 15): skus[].management_nic.speed_gbps and
# addressing.gateway are compiled into desired.management (plan/desired_network.py); a new gap goes here
KNOWN_GAPS: dict[str, str] = {}


def _models_in(ann: object) -> list[tuple[type[BaseModel], str]]:
    """The models an annotation holds, each with the path suffix that reaches it (`[]`, `.*`)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _models_in(typing.get_args(ann)[0])
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [(ann, "")]
    args = typing.get_args(ann)
    if origin in (list, tuple, set, frozenset):
        return [(m, "[]" + s) for a in args for m, s in _models_in(a)]
    if origin is dict and args:
        return [(m, ".*" + s) for m, s in _models_in(args[1])]
    if origin in (typing.Union, types.UnionType):
        return [x for a in args for x in _models_in(a)]
    return []


def leaves(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted paths of every field that holds no model (the fields a consumer reads), recursively."""
    out: list[str] = []
    for name, f in model.model_fields.items():
        nested = _models_in(f.annotation)
        if not nested:
            out.append(prefix + name)
        for m, suffix in nested:
            out += [p for p in leaves(m, f"{prefix}{name}{suffix}.") if p not in out]
    return out


def matches(path: str, key: str) -> bool:
    """`key` covers `path`; `*` stands for one name (no dot)."""
    return re.fullmatch(re.escape(key).replace(r"\*", r"[^.]+"), path) is not None


def entry(path: str) -> str | None:
    """The table key covering `path` (exact first, then a `*` pattern)."""
    tables = (CONSUMERS, NO_BEHAVIOUR, KNOWN_GAPS)
    for t in tables:
        if path in t:
            return path
    hits = [k for t in tables for k in t if "*" in k and matches(path, k)]
    return hits[0] if len(hits) == 1 else None


def test_every_field_has_a_consumer_or_a_reason() -> None:
    fields = leaves(Cluster)
    assert len(fields) > 150  # the walk reached the nested models (SKU included)
    unread = [p for p in fields if entry(p) is None]
    assert not unread, f"spec fields nothing reads (wire them, reject them, or give a reason): {unread}"


def test_each_consumer_reads_its_field() -> None:
    wrong = []
    for path, (file, needle) in CONSUMERS.items():
        text = (REPO / file).read_text(encoding="utf-8")
        if needle not in text:
            wrong.append(f"{path}: {file} does not contain {needle!r}")
    assert not wrong, wrong


def test_no_stale_entries_and_no_field_in_two_tables() -> None:
    fields = leaves(Cluster)
    keys = [*CONSUMERS, *NO_BEHAVIOUR, *KNOWN_GAPS]
    assert len(keys) == len(set(keys))
    stale = [k for k in keys if not any(matches(p, k) for p in fields)]
    assert not stale, f"table entries for fields the spec no longer has: {stale}"
    assert all(NO_BEHAVIOUR.values()) and all(KNOWN_GAPS.values())


def test_walk_finds_a_new_field() -> None:
    """A field added anywhere (here under software) is reported until a table names it."""
    extended = create_model("Software", __base__=Software, firmware_bundle=(str, "x"))
    cluster = create_model("Cluster", __base__=Cluster, software=(extended, ...))
    fields = leaves(cluster)
    assert "software.firmware_bundle" in fields and entry("software.firmware_bundle") is None
    assert "software.rdma.stack" in fields and "pools[].nodes[].bmc.vendor" in fields


def test_more_network_nics_than_the_sku_has_is_rejected() -> None:
    """storage_nics.count / management_nic.count are read: a network needing more NICs than a pool's SKU has
    is a spec error, once per SKU (the lab's two SKUs have 2 storage NICs each)."""
    from ._helpers import LAB, edit, problems

    found = problems(edit(LAB, "nics_per_node: 2, mtu: 9000}", "nics_per_node: 3, mtu: 9000}"))
    assert [(p.path, p.found) for p in found] == [("fabrics.storage.nics_per_node", "3")] * 2
    assert {p.expected.split("SKU ")[1].split(" ")[0] for p in found} == {
        "h100-sxm-8x400g-roce",
        "h100-sxm-8x400g-ib",
    }
