"""One validator file alone on lab nodes, through the certification runner's own pieces (its ssh_config,
pytest argv, results stream): no record, certificate or admission is touched. For lab tests that judge one
area cheaply instead of a whole tier."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def run_validator(
    certify_lab: Any, nodes: list[str], out: Path, filename: str, tier: str = "full", timeout_s: int = 180
) -> dict[str, dict[str, Any]]:
    """node -> check_id -> result of validators/<filename> alone on each node (tier `tier`), in parallel."""
    from clusterforge import assets
    from clusterforge.certify.results import read_results
    from clusterforge.certify.runner import PYTEST_ENV, NodeRun, pytest_argv, run_node
    from clusterforge.remote.ssh import reachable, ssh_setup

    ssh = ssh_setup(certify_lab.doc, certify_lab.inventory, nodes)
    out.mkdir(parents=True, exist_ok=True)

    def one(node: str) -> dict[str, Any]:
        ok, why = reachable(ssh, node)
        assert ok, f"{node}: {why}"
        run = NodeRun(node, out / f"{node}.jsonl", timeout_s)
        argv = pytest_argv(certify_lab.inventory / "plan.json", ssh, node, tier, run.results)
        argv[argv.index(str(assets.validators()))] = str(assets.validators() / filename)
        run_node(argv, run, env=dict(PYTEST_ENV))
        res = read_results(run.results, node)
        log = run.results.with_suffix(".log")
        assert res.complete and res.checks, (node, res.note, log.read_text()[-2000:] if log.exists() else "")
        return {c.check_id: c for c in res.checks}

    try:
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            return dict(zip(nodes, pool.map(one, nodes), strict=True))
    finally:
        ssh.close()
