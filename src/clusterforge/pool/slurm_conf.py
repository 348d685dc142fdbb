"""Slurm files rendered from the plan: `gres.conf` and `topology.conf` (`clusterforge.plan.slurm_files`,
re-exported here), and the slurm.conf lines that make the node-side health check Slurm's HealthCheckProgram.
"""

from __future__ import annotations

from clusterforge.plan.slurm_files import (
    gpu_type,
    healthcheck_conf_lines,
    hostlist,
    node_gres,
    render_gres_conf,
    render_topology_conf,
    topology_plugin,
)

__all__ = [
    "gpu_type",
    "healthcheck_conf_lines",
    "hostlist",
    "node_gres",
    "render_gres_conf",
    "render_healthcheck_script",
    "render_topology_conf",
    "topology_plugin",
]


# An active re-certification wrapper (`certify --tier quick` from the node); the passive HealthCheckProgram
# the roles install is `clusterforge.health.nodecheck` (healthcheck_conf_lines).
HEALTHCHECK_TEMPLATE = """#!/bin/bash
# clusterforge HealthCheckProgram for cluster {cluster} (rendered by clusterforge; edits are overwritten).
#
# slurm.conf:  HealthCheckProgram={path}
#              HealthCheckInterval={interval}
#              HealthCheckNodeState=IDLE,CYCLE
#
# Runs the quick certification of this node and lets clusterforge drain or admit it through the pool
# manager (whose drains carry a `clusterforge:` reason and whose resumes touch only those). It never calls
# scontrol itself, never blocks slurmd: it returns at once when a check of this node is already running,
# and the run is bounded by `timeout`.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export CLUSTERFORGE_DB="${{CLUSTERFORGE_DB:-{db}}}"
NODE="$(hostname -s)"
LOCK="{lock}"
exec 9>"$LOCK" || exit 0
flock -n 9 || exit 0
timeout --kill-after=30 {timeout_s} \\
  {clusterforge} certify --tier quick --limit "$NODE" --admit {extra}>>"{log}" 2>&1
rc=$?
# 0 certified and admitted; 3 not as declared (the certify run drained the node with its reason);
# anything else: the check could not run. Leave the node as it is and say so in the log.
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || echo "$(date -Is) $NODE: clusterforge certify exited $rc" >>"{log}"
exit 0
"""


def render_healthcheck_script(
    cluster: str,
    *,
    clusterforge: str = "/usr/local/bin/clusterforge",
    path: str = "/usr/local/sbin/clusterforge-healthcheck",
    interval_s: int = 3600,
    timeout_s: int = 900,
    db: str = "/var/lib/clusterforge/records.db",
    log: str = "/var/log/clusterforge-healthcheck.log",
    lock: str = "/run/clusterforge-healthcheck.lock",
    extra_args: str = "",
) -> str:
    """The HealthCheckProgram wrapper (see docs/pool.md): `clusterforge certify --tier quick --limit
    $(hostname -s) --admit` under a lock and a timeout."""
    return HEALTHCHECK_TEMPLATE.format(
        cluster=cluster,
        clusterforge=clusterforge,
        path=path,
        interval=interval_s,
        timeout_s=timeout_s,
        db=db,
        log=log,
        lock=lock,
        extra=f"{extra_args} " if extra_args else "",
    )
