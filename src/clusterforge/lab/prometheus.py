"""The lab's Prometheus: the distribution's `prometheus` binary on the lab host, its configuration generated
from the plan (`clusterforge.plan.prometheus_config`: every node's node-exporter and dcgm-exporter, the
exporters the monitoring role installs) with the project's alert rules loaded, as a site would run it.

It listens on the host's loopback only (`127.0.0.1:9390`, beside a host's own Prometheus on 9090) and keeps
one day of samples under the lab's state folder. Started with the lab's infrastructure, restarted when the
generated configuration changes, stopped with it. A host without the binary gets a warning and no
Prometheus (`make system-deps` installs it).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clusterforge import assets
from clusterforge.lab import procs
from clusterforge.plan.prometheus_config import render

log = logging.getLogger(__name__)

LISTEN = "127.0.0.1:9390"
#: the lab scrapes and evaluates more often than a site would (15 s-1 min) so tests see alerts in seconds
SCRAPE_INTERVAL = "5s"
RETENTION = "1d"


def url() -> str:
    return f"http://{LISTEN}"


def _folder(state_dir: Path) -> Path:
    return state_dir / "prometheus"


def config_text(plan_doc: Mapping[str, Any], rules: Path) -> str:
    return render(
        plan_doc,
        rule_files=[str(rules)],
        scrape_interval=SCRAPE_INTERVAL,
        evaluation_interval=SCRAPE_INTERVAL,
    )


def argv(binary: str, folder: Path) -> list[str]:
    return [
        binary,
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--storage.tsdb.retention.time={RETENTION}",
        f"--web.listen-address={LISTEN}",
    ]


def running(state_dir: Path) -> int | None:
    return procs.live_pid(_folder(state_dir) / "prometheus.pid", "prometheus")


def start(plan_doc: Mapping[str, Any], state_dir: Path) -> int | None:
    """Start (or keep, when it runs with the same configuration) the lab's Prometheus; returns its pid."""
    binary = shutil.which("prometheus")
    if binary is None:
        log.warning("lab: no prometheus binary on this host (make system-deps installs it): not started")
        return None
    folder = _folder(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    conf, text = (
        folder / "prometheus.yml",
        config_text(plan_doc, assets.monitoring() / "alerts" / "clusterforge.rules.yml"),
    )
    pid = running(state_dir)
    if pid is not None and conf.exists() and conf.read_text() == text:
        return pid
    procs.stop_pid(pid)
    conf.write_text(text)
    return procs.spawn_daemon(argv(binary, folder), folder / "prometheus.pid", folder / "prometheus.log")


def stop(state_dir: Path) -> None:
    procs.stop_pid(running(state_dir), timeout=15)
    (_folder(state_dir) / "prometheus.pid").unlink(missing_ok=True)
