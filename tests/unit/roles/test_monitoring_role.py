"""The monitoring role: its files are the node check and the registry policy as clusterforge has them, and its
templates render the plan's ports, counters and paths (from clusterforge_desired.monitoring)."""

from __future__ import annotations

import json
from pathlib import Path

from clusterforge.checks.node_policy import render as render_policy
from clusterforge.health import nodecheck
from clusterforge.lab.sim.dcgm_exporter import FIELDS, read_counters

from ._support import PLAYBOOKS
from .test_templates import ROCKY, render

FILES = PLAYBOOKS / "roles" / "monitoring" / "files"


def test_the_node_check_is_the_package_module() -> None:
    shipped = (FILES / "clusterforge-healthcheck").read_text()
    assert shipped == Path(nodecheck.__file__).read_text(), (
        "cp src/clusterforge/health/nodecheck.py playbooks/roles/monitoring/files/clusterforge-healthcheck"
    )


def test_the_policy_file_is_the_registry() -> None:
    assert (FILES / "health-policy.json").read_text() == render_policy(), (
        "clusterforge checks node-policy --output playbooks/roles/monitoring/files/health-policy.json"
    )


def test_templates_render_the_plans_values() -> None:
    out = render(
        "monitoring",
        templates={
            "args": "templates/node-exporter.defaults.j2",
            "counters": "templates/dcgm-exporter-counters.csv.j2",
            "dropin": "templates/dcgm-exporter.dropin.conf.j2",
            "service": "templates/clusterforge-healthcheck.service.j2",
            "timer": "templates/clusterforge-healthcheck.timer.j2",
        },
        expressions={"spec": "{{ [d.package] | clusterforge.node.package_specs(d.version, 'Debian') }}"},
        variables={"d": "{{ clusterforge_desired.monitoring.dcgm_exporter }}"},
    )
    assert out["args"].splitlines()[-1] == (
        'ARGS="--web.listen-address=:9100 --collector.textfile.directory=/var/lib/prometheus/node-exporter"'
    )
    rows = read_counters(out["counters"])
    assert [r[0] for r in rows][:2] == ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"]
    assert "DCGM_FI_DEV_ROW_REMAP_PENDING" in [r[0] for r in rows] and "DCGM_FI_DEV_XID_ERRORS" in [
        r[0] for r in rows
    ]
    # the lab's simulated exporter serves every field the plan asks for
    assert {r[0] for r in rows} <= set(FIELDS)
    assert (
        "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/clusterforge-counters.csv -a :9400"
        in out["dropin"]
    )
    assert out["spec"] == ["datacenter-gpu-manager-exporter=4.5.0*"]
    health = "/usr/local/sbin/clusterforge-healthcheck --config /etc/clusterforge/healthcheck.json"
    assert f"ExecStart=/usr/bin/python3 {health}" in out["service"]
    assert "OnUnitActiveSec=300" in out["timer"]


def test_redhat_package_names() -> None:
    out = render(
        "monitoring",
        family="RedHat",
        facts=ROCKY,
        expressions={
            "pkg": "{{ _monitoring_node_exporter_package }}",
            "svc": "{{ _monitoring_node_exporter_service }}",
        },
    )
    assert out == {"pkg": "golang-github-prometheus-node-exporter", "svc": "prometheus-node-exporter"}


def test_health_config_is_the_desired_state_plus_the_pool() -> None:
    expr = "{{ clusterforge_desired.monitoring.health | combine({'pool': 'none'}) | to_nice_json }}"
    cfg = json.loads(render("monitoring", expressions={"cfg": expr})["cfg"])
    assert cfg["gpu_count"] == 8 and cfg["pool"] == "none"
    assert [r["netdev"] for r in cfg["rails"]] == ["enp24s0np0", "enp64s0np0"]
    assert cfg["policy"] == "/etc/clusterforge/health-policy.json"
