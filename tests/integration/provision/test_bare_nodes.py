"""A lab node starts as a minimal server install: no tool a role installs is there before provisioning, and
every one is there after (installed over the network from the lab's Debian proxy and vendor repository)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.lab
TOOLS = ["ibstat", "ib_write_bw", "mlnx_qos", "mlxconfig", "ofed_info", "chronyd", "slurmd", "lspci"]
# installed by the benchmarks role (issue 15 item 2) once it exists
BENCH_TOOLS = ["nvbandwidth", "all_reduce_perf"]


def _present(plab: Any, name: str, tools: list[str]) -> dict[str, bool]:
    script = "; ".join(f"command -v {t} >/dev/null && echo {t}=yes || echo {t}=no" for t in tools)
    res = plab.lab.exec(name, ["sh", "-c", script], timeout=60)
    assert res.returncode == 0, res.stderr
    return {k: v == "yes" for k, v in (line.split("=") for line in res.stdout.split())}


def test_pristine_node_has_no_role_tool_and_provisioning_installs_them(provisioned_lab: Any) -> None:
    plab = provisioned_lab
    name = plab.nodes[0]
    after = _present(plab, name, TOOLS + BENCH_TOOLS)
    plab.lab.reset(name, wait=True)
    try:
        before = _present(plab, name, TOOLS + BENCH_TOOLS)
        assert not any(before.values()), (
            f"a pristine {name} already has {[t for t, y in before.items() if y]}"
        )
        installed = plab.lab.exec(name, ["dpkg-query", "-W", "-f=${Package}\\n"], timeout=60).stdout.split()
        assert not {"rdma-core", "perftest", "chrony", "tuned", "slurmd", "munge"} & set(installed)
    finally:
        plab.restore(name)
    missing = [t for t in TOOLS if not after[t]]
    assert not missing, f"provisioned {name} lacks {missing}"
    if (REPO / "playbooks/roles/benchmarks").is_dir():
        assert all(after[t] for t in BENCH_TOOLS), after


def test_packages_came_through_the_lab_repositories(provisioned_lab: Any) -> None:
    plab = provisioned_lab
    name = plab.nodes[0]
    res = plab.lab.exec(name, ["sh", "-c", "cat /etc/apt/apt.conf.d/80clusterforge-proxy; ofed_info -s"])
    assert 'Acquire::http::Proxy "http://10.244.0.1:3142";' in res.stdout
    assert "OFED-internal-25.01-0.6.0:" in res.stdout  # doca-ofed 2.10.0 from the vendor repository
    # the simulated tool is the diverted path; Debian's binary was kept aside by the diversion
    res = plab.lab.exec(name, ["sh", "-c", "readlink /usr/sbin/ibstat; test -e /usr/sbin/ibstat.distrib"])
    assert res.returncode == 0 and res.stdout.strip() == "/usr/lib/clusterforge-sim/clusterforge-sim"
