"""The passive health check's cost per node (target: well under 1 s; Slurm runs it every interval).

    python bench/bench_health.py local [--repeat 200]
        in-process, against a simulated node under a temporary root (the lab simulator's state, its
        dcgm-exporter exposition and dmesg): the check's own work, no interpreter start
    python bench/bench_health.py lab --nodes roce-01,ib-01 [--ssh 'ssh -F SSHCONFIG'] [--repeat 20]
        on provisioned nodes: wall time of `python3 <health.path>` as Slurm starts it (interpreter start
        included), with a scratch state directory, so the nodes' real check misses no event

Prints markdown for bench/README.md ("Health check").
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HEALTH_PATH = "/usr/local/sbin/clusterforge-healthcheck"
HEALTH_CONFIG = "/etc/clusterforge/healthcheck.json"


def _table(rows: list[tuple[str, list[float]]]) -> str:
    out = ["| where | runs | median ms | p95 ms | max ms |", "|---|---|---|---|---|"]
    for name, ms in rows:
        p95 = sorted(ms)[max(0, int(len(ms) * 0.95) - 1)]
        out.append(f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {p95:.1f} | {max(ms):.1f} |")
    return "\n".join(out)


def local(repeat: int) -> list[tuple[str, list[float]]]:
    from clusterforge.health import nodecheck
    from clusterforge.lab.sim import dcgm_exporter, main, paths
    from clusterforge.lab.sim import state as S
    from tests.conftest import example_plan

    plan = json.loads(json.dumps(example_plan("lab").doc))
    node = plan["nodes"][0]
    with tempfile.TemporaryDirectory(prefix="cf-bench-health-") as root:
        os.environ["CLUSTERFORGE_SIM_ROOT"] = root
        S.save(S.initial_state(plan, node["name"]))
        paths.write(f"{paths.PKG_MARKERS}/nvidia-driver.json", json.dumps({"version": "570.133.20"}))
        with open(os.devnull, "w") as sink:
            saved, sys.stdout = sys.stdout, sink
            try:
                main.run(["clusterforge-sim", "boot"])
            finally:
                sys.stdout = saved
        for r in node["rails"]:
            paths.write(f"/sys/class/net/{r['netdev']}/operstate", "up\n")
            paths.write(f"/sys/class/net/{r['netdev']}/carrier_changes", "2\n")
        cfg = {**node["desired"]["monitoring"]["health"], "textfile": ""}

        def run(argv: list[str], timeout: float) -> tuple[int, str]:
            if argv[0] == "dmesg":
                import contextlib
                import io

                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    rc = main.run(["clusterforge-sim", "dmesg"])
                return rc, buf.getvalue()
            return 0, ""

        def http(url: str, timeout: float) -> str:
            return dcgm_exporter.render(S.load(), "570.133.20", node["name"])

        ms = []
        for _ in range(repeat):
            env = nodecheck.Env(root=root, run=run, http=http)
            t0 = time.perf_counter()
            nodecheck.run(cfg, env, node["name"], "none")
            ms.append((time.perf_counter() - t0) * 1000)
    return [(f"in-process, simulated {node['sku']} node", ms)]


def lab(nodes: list[str], ssh: str, repeat: int) -> list[tuple[str, list[float]]]:
    check = f"{HEALTH_PATH} --config {HEALTH_CONFIG} --pool none --state-dir /tmp/cf-bench-health"
    loop = (
        f"for i in $(seq {repeat}); do s=$(date +%s%N); {check} >/dev/null; e=$(date +%s%N); "
        "echo $(( (e-s)/1000 )); done"
    )
    rows = []
    for n in nodes:
        res = subprocess.run(
            [*shlex.split(ssh), n, loop], capture_output=True, text=True, timeout=600, check=False
        )
        if res.returncode != 0:
            print(f"{n}: rc {res.returncode}: {res.stderr.strip()[:300]}", file=sys.stderr)
            continue
        rows.append((f"{n} (python3 start included)", [int(x) / 1000 for x in res.stdout.split()]))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    lo = sub.add_parser("local")
    lo.add_argument("--repeat", type=int, default=200)
    la = sub.add_parser("lab")
    la.add_argument("--nodes", required=True)
    la.add_argument("--ssh", default="ssh")
    la.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    rows: list[tuple[str, Any]]
    if args.mode == "local":
        sys.path.insert(0, str(REPO))
        rows = local(args.repeat)
    else:
        rows = lab(args.nodes.split(","), args.ssh, args.repeat)
    print(_table(rows))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
