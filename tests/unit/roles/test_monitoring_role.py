"""The monitoring role: its templates render the plan's ports, counters and paths (from
clusterforge_desired.monitoring); the health check is the node checker, never a copy of its own."""

from __future__ import annotations

import json

from clusterforge.lab.sim.dcgm_exporter import FIELDS, read_counters

from ._support import PLAYBOOKS
from .test_templates import ROCKY, render

FILES = PLAYBOOKS / "roles" / "monitoring" / "files"


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
    assert f"ExecStart={health}" in out["service"]
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
    assert "policy" not in cfg  # the registry's rules are the program's own


def test_the_role_ships_no_health_check_of_its_own() -> None:
    """No standalone copy and no policy file: the health check path links to the node checker, and a
    health check without the checker is refused by the role's validation."""
    assert not (FILES / "clusterforge-healthcheck").exists() and not (FILES / "health-policy.json").exists()
    tasks = (PLAYBOOKS / "roles/monitoring/tasks/health.yml").read_text()
    assert "state: link" in tasks and "ansible.builtin.copy:\n    src: clusterforge-healthcheck" not in tasks
    assert (
        "monitoring_checker_bundle | length > 0"
        in (PLAYBOOKS / "roles/monitoring/tasks/validate.yml").read_text()
    )
