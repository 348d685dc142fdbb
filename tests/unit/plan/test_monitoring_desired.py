"""The monitoring desired state and the Slurm files the inventory carries: values from the plan, once."""

from __future__ import annotations

import copy
import dataclasses

from clusterforge.plan.desired_monitoring import counters_csv, monitoring_desired, monitoring_input
from clusterforge.plan.inventory import all_vars
from clusterforge.plan.slurm_files import healthcheck_conf_lines, render_gres_conf, render_topology_conf


def test_every_node_carries_its_monitoring(example) -> None:
    plan = example("lab")
    pins = monitoring_input(plan.doc["software"], plan.doc["certification"])
    for n in plan.doc["nodes"]:
        mon = n["desired"]["monitoring"]
        sku = plan.doc["skus"][n["sku"]]
        assert mon == monitoring_desired(sku, n["rails"], pins)
        assert mon["health"]["gpu_count"] == sku["gpu"]["count"]
        assert [r["netdev"] for r in mon["health"]["rails"]] == [r["netdev"] for r in n["rails"]]
        assert mon["health"]["fabric_manager"] == sku["gpu"]["nvswitch"]
        assert mon["node_exporter"]["port"] == 9100 and mon["dcgm_exporter"]["port"] == 9400


def test_counters_file_lists_the_alerts_fields() -> None:
    text = counters_csv()
    for field in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"):
        assert f"\n{field}, " in text


def test_inventory_carries_the_slurm_files_only_for_slurm(example) -> None:
    base = example("lab")
    plan = dataclasses.replace(base, doc=copy.deepcopy(base.doc))
    plan.doc["pool_manager"] = "file"
    assert "slurm_node_gres_conf" not in all_vars(plan)
    plan.doc["pool_manager"] = "slurm"
    out = all_vars(plan)
    assert out["slurm_node_gres_conf"] == render_gres_conf(plan.doc)
    assert out["slurm_node_topology_conf"] == render_topology_conf(plan.doc)
    assert "Name=gpu" in out["slurm_node_gres_conf"] and "SwitchName=" in out["slurm_node_topology_conf"]


def test_healthcheck_lines(example) -> None:
    base = example("lab")
    plan = dataclasses.replace(base, doc=copy.deepcopy(base.doc))
    assert healthcheck_conf_lines(plan.doc) == [
        "HealthCheckProgram=/usr/local/sbin/clusterforge-healthcheck",
        "HealthCheckInterval=300",
        "HealthCheckNodeState=ANY,CYCLE",
    ]
    plan.doc["nodes"][0]["desired"] = copy.deepcopy(plan.doc["nodes"][0]["desired"])
    plan.doc["nodes"][0]["desired"]["monitoring"]["health"]["interval_s"] = 60
    try:
        healthcheck_conf_lines(plan.doc)
    except ValueError as exc:
        assert "differ" in str(exc)
    else:
        raise AssertionError("nodes with different intervals must be refused")


def test_the_spec_sets_the_health_period_and_the_exporter_pin(spec_text, plan_text, edit) -> None:
    """`certification.health_interval_s` and `software.dcgm_exporter` are read once, into the desired state:
    the slurm.conf lines, the timer and the exporter's package version all come from there."""
    text = edit(
        spec_text("lab"), "  check_timeout_s: 30\n", "  check_timeout_s: 30\n  health_interval_s: 120\n"
    )
    text = edit(text, '  dcgm: "4.2.3"\n', '  dcgm: "4.2.3"\n  dcgm_exporter: "4.1.3"\n')
    plan = plan_text(text)
    for n in plan.doc["nodes"]:
        mon = n["desired"]["monitoring"]
        assert mon["health"]["interval_s"] == 120 and mon["dcgm_exporter"]["version"] == "4.1.3"
    assert "HealthCheckInterval=120" in healthcheck_conf_lines(plan.doc)
    default = plan_text(spec_text("lab"))
    assert {n["expectation_digest"] for n in default.doc["nodes"]}.isdisjoint(
        n["expectation_digest"] for n in plan.doc["nodes"]
    )  # a node certified under the old period or pin is not certified under the new one
