"""The rendered boot-time RoCE QoS script, QOS_TOOL=dcb, against the lab simulator's dcb: it brings a NIC
from its defaults to the desired QoS, then finds nothing to change; mlnx_qos reads the same state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sim.conftest import SimNode

from clusterforge.hw import dcb, mlnx_qos

from ._support import HERE
from .test_templates import render

SRC = HERE.parents[2] / "src"
DEV = "enp24s0np0"


def _run(tmp: Path, node: SimNode, *args: str) -> tuple[int, str]:
    text = render("rdma", templates={"s": "templates/clusterforge-roce-qos.sh.j2"})["s"]
    conf = render(
        "rdma",
        variables={
            "_rdma_qos_tool": "dcb",
            "_rdma_roce_rails": "{{ _rdma_roce_rails[:1] }}",
            "rdma_netdev_wait_s": 0,
        },
        templates={"c": "templates/roce-qos.conf.j2"},
    )["c"]
    (tmp / "conf").write_text(conf)
    (tmp / "net" / DEV).mkdir(parents=True, exist_ok=True)
    script = text.replace("conf=/etc/clusterforge/roce-qos.conf", f"conf={tmp / 'conf'}")
    (tmp / "s.sh").write_text(script.replace("/sys/class/net/", f"{tmp}/net/"))
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "dcb").write_text(f'#!/bin/sh\nexec {sys.executable} -m clusterforge.lab.sim dcb "$@"\n')
    (bin_dir / "dcb").chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        PYTHONPATH=str(SRC),
        CLUSTERFORGE_SIM_ROOT=str(node.root),
    )
    p = subprocess.run(
        ["bash", str(tmp / "s.sh"), *args], capture_output=True, text=True, timeout=120, check=False, env=env
    )
    return p.returncode, p.stdout + p.stderr


def test_dcb_path_converges_on_the_simulated_nic(tmp_path: Path) -> None:
    node = SimNode(tmp_path / "node", "h100-sxm-8x400g-roce")
    rc, out = _run(tmp_path, node, "--check", "--qos-only")
    assert rc == 0 and f"DRIFT {DEV} pfc before=0,0,0,0,0,0,0,0 after=0,0,0,1,0,0,0,0" in out, out
    assert f"DRIFT {DEV} dscp26 before=none after=3" in out
    # --check changed nothing
    assert dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV)).priorities == ()
    rc, out = _run(tmp_path, node, "--apply", "--qos-only")
    assert rc == 0 and f"CHANGED {DEV} pfc" in out, out
    assert dcb.parse_pfc(node.ok("dcb", "-j", "pfc", "show", "dev", DEV)).priorities == (3,)
    app = dcb.parse_app(node.ok("dcb", "-j", "app", "show", "dev", DEV))
    assert app.prios_of_dscp(26) == (3,) and app.prios_of_dscp(48) == (6,)
    q = mlnx_qos.parse(node.ok("mlnx_qos", "-i", DEV))  # one truth: the doca path reads what dcb set
    assert q.trust_state == "dscp" and q.pfc_priorities == (3,)
    rc, out = _run(tmp_path, node, "--check", "--qos-only")
    assert rc == 0 and "DRIFT" not in out, out
