"""The roles and the validators agree on every compiled setting: spec -> plan -> inventory (as `clusterforge
plan` writes it) -> role templates rendered by Ansible's templar, compared with what the validators expect
from the same plan.json (NodeExpect). Nothing on either side derives a value again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.certify import readers
from clusterforge.certify.checks import CheckFailed
from clusterforge.plan import build_plan
from clusterforge.plan.expect import NodeExpect, nodes_of, read_plan_json
from clusterforge.plan.outputs import write_outputs
from clusterforge.spec import load_spec_text
from tests.conftest import REPO

from .conftest import FakeNode, validator

RENDER = REPO / "tests" / "unit" / "roles" / "helpers" / "render.py"  # Ansible's templar, real precedence

LAB = (REPO / "inventory" / "clusters" / "lab.yaml").read_text(encoding="utf-8")
FACTS = {  # an AMD node: the role must still follow the SKU (Intel)
    "distribution": "Debian",
    "distribution_major_version": "12",
    "distribution_version": "12.5",
    "processor": ["0", "AuthenticAMD", "AMD EPYC 7742 64-Core Processor"],
}
OS_TUNING = {
    "templates": {
        "grub": "templates/grub-clusterforge.cfg.j2",
        "sysctl": "templates/sysctl.conf.j2",
        "conf": "templates/os-tuning.conf.j2",
        "limits": "templates/limits.conf.j2",
        "memlock": "templates/systemd-memlock.conf.j2",
    },
    "expressions": {
        "attrs": "{{ _os_tuning_sysctl_attrs }}",
        "cpuidle": "{{ _os_tuning_cpuidle_attrs | map(attribute='path') | list }}",
        "tuned": "{{ _os_tuning_tuned_profile }}",
        "irqbalance": "{{ _os_tuning_irqbalance | bool }}",
    },
}
RDMA = {
    "templates": {"qos": "templates/roce-qos.conf.j2"},
    "expressions": {
        "net_mtu": "{{ dict(_rdma_net_rails | map(attribute='index') | zip(_rdma_net_rails"
        " | map(attribute='netdev') | map('extract', _rdma_want) | map(attribute='netdev_mtu'))) }}",
        "ib_mtu": "{{ _rdma_ib_rails | map(attribute='netdev') | map('extract', _rdma_want)"
        " | map(attribute='netdev_mtu') | list }}",
        "tool": "{{ _rdma_qos_tool }}",
        "stack": "{{ rdma_stack }}",
        "stack_version": "{{ rdma_stack_version }}",
        "modules": "{{ clusterforge_desired.modules | selectattr('role', 'eq', 'rdma') | list }}",
    },
}
GPU = {
    "expressions": {
        "acs": "{{ _nvidia_gpu_acs_disable | bool }}",
        "groups": "{{ _nvidia_gpu_pinned_groups }}",
        "peermem": "{{ _nvidia_gpu_peermem }}",
    }
}
NCCL = {"expressions": {"package": "{{ _nccl_package }}"}}
ROLES = (("os_tuning", OS_TUNING), ("nvidia_gpu", GPU), ("nccl", NCCL))


os_tuning = validator("os_tuning")
rdma_v = validator("rdma")


def booted(files: dict[str, str]) -> FakeNode:
    """A node whose files hold ``files`` (path -> content)."""
    return FakeNode({f"cat {path}": (0, value + "\n") for path, value in files.items()})


def with_tuning(text: str, t: dict[str, Any]) -> str:
    hp = t["hugepages"]
    subs = {
        r"  hugepages: \{.*\}\n": (
            f"  hugepages: {{size: {hp[0]}, count: {hp[1]}, per_numa: {str(hp[2]).lower()}}}\n"
        ),
        r"  cstate_max: \d+\n": f"  cstate_max: {t['cstate_max']}\n",
        r"  thp: \w+\n": f"  thp: {t['thp']}\n",
        r"  numa_balancing: \w+\n": f"  numa_balancing: {str(t['numa_balancing']).lower()}\n",
        r"  roce: \{lossless_priority: 3, dscp: 26, cnp_dscp: 48, cnp_priority: 6, mtu: 9000, ecn: true\}": (
            f"  roce: {{lossless_priority: {t['prio']}, dscp: {t['dscp']}, cnp_dscp: 48, "
            f"cnp_priority: {(t['prio'] + t['cnp_off']) % 8}, mtu: {t['mtu']}, ecn: {str(t['ecn']).lower()}}}"
        ),
        r"  rdma: \{stack: doca-ofed, ": f"  rdma: {{stack: {t['stack']}, ",
        r"  governor: \w+\n": f"  governor: {t['governor']}\n",
        r"  irqbalance: \w+\n": (
            f"  irqbalance: {str(t['irqbalance']).lower()}\n  acs_disable: {str(t['acs']).lower()}\n"
        ),
        r"  tuned_profile: [\w-]+\n": f"  tuned_profile: {t['tuned']}\n",
        r"  iommu: \w+\n": f"  iommu: '{t['iommu']}'\n",
    }
    for pattern, new in subs.items():
        text, n = re.subn(pattern, new, text, count=1)
        assert n == 1, pattern
    return text


def compile_and_render(texts: list[str], out: Path) -> list[tuple[dict[str, NodeExpect], dict[str, Any]]]:
    """Each spec text -> plan -> inventory files -> (the validators' view, the rendered role output), with
    one Ansible start for all of them."""
    jobs, views = [], []
    for i, text in enumerate(texts):
        folder = write_outputs(build_plan(load_spec_text(text, "test.yaml")), out / str(i), svg=False)
        views.append(nodes_of(read_plan_json(folder / "plan.json"), folder))
        for host in ("roce-01", "ib-01"):
            rdma = RDMA if host.startswith("roce") else {"expressions": RDMA["expressions"]}  # no QoS on IB
            for role, req in (*ROLES, ("rdma", rdma)):
                jobs.append([str(folder / "hosts.yml"), host, role, "Debian", FACTS, req])
    batch = out / "jobs.json"
    batch.write_text(json.dumps(jobs))
    proc = subprocess.run(
        [sys.executable, str(RENDER), "--batch", str(batch)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    rendered = iter(json.loads(proc.stdout))
    out_views = []
    for nodes in views:
        per_host = {}
        for host in ("roce-01", "ib-01"):
            per_host[host] = {role: next(rendered) for role in (*(r for r, _ in ROLES), "rdma")}
        out_views.append((nodes, per_host))
    return out_views


def _shell_vars(text: str) -> dict[str, str]:
    """KEY=value data lines as the boot scripts read them (never sourced)."""
    return dict(re.findall(r"(?m)^([A-Z_]+)=(.*)$", text))


def assert_agree(node: NodeExpect, r: dict[str, Any]) -> None:
    """Every setting the roles render equals what the validators expect of the node."""
    ot, rdma, gpu, nccl = r["os_tuning"], r["rdma"], r["nvidia_gpu"], r["nccl"]
    # kernel command line (C-states by the SKU's vendor, IOMMU, hugepages with the per-NUMA split)
    line = ot["grub"].splitlines()[-1]
    params = line.split("$GRUB_CMDLINE_LINUX }", 1)[1].rstrip('"').split()
    assert dict(p.partition("=")[::2] for p in params) == os_tuning.expected_cmdline(node)
    hp = node.desired["hugepages"]
    value = dict(p.partition("=")[::2] for p in params).get("hugepages")
    if hp["total"] == 0:
        assert value is None
    elif hp["per_numa"]:
        split = dict(part.split(":") for part in value.split(","))
        assert {k: int(v) for k, v in split.items()} == hp["per_numa"]
        assert sum(hp["per_numa"].values()) == hp["total"]
    else:
        assert value == str(hp["total"])
    # sysctls: the drop-in and the runtime paths are exactly the ones the validator reads
    conf = dict(
        line.split(" = ", 1) for line in ot["sysctl"].splitlines() if line and not line.startswith("#")
    )
    want = node.desired["sysctls"]
    assert set(conf) == set(want) and all(conf[k].split() == want[k].split() for k in want)
    assert {a["name"]: a["path"] for a in ot["attrs"]} == {k: os_tuning.sysctl_path(k) for k in want}
    # THP, C-state limit and governor at boot
    boot = _shell_vars(ot["conf"])
    assert boot["THP"] == node.desired["thp"]
    assert boot["CSTATE_MAX"] == str(node.desired["cpu"]["cstate_max"])
    assert boot["GOVERNOR"] == node.desired["cpu"]["governor"]
    # memlock for logins and services
    eff = readers.memlock_for_users(readers.limits(ot["limits"], "limits.d/90-clusterforge-memlock.conf"))
    assert eff == node.desired["limits"]["memlock_login"]
    assert f"DefaultLimitMEMLOCK={node.desired['limits']['memlock_systemd']}" in ot["memlock"]
    # runtime C-states: exactly the idle states deeper than the limit the validator holds the node to
    limit = int(node.desired["cpu"]["cstate_max"])
    assert ot["cpuidle"][0].endswith(f"/state{limit + 1}/disable") and len(ot["cpuidle"]) == 15 - limit
    # services: irqbalance and the tuned profile (test_irqbalance, test_tuned_profile)
    assert ot["irqbalance"] == node.desired["services"]["irqbalance"]
    assert ot["tuned"] == (node.desired["services"]["tuned_profile"] or "")
    # ACS (gpu.acs)
    assert gpu["acs"] == node.desired["pcie"]["acs_disable"]
    # RDMA stack: installed (rdma_stack) and the QoS tool the validator reads with (test_roce_qos)
    want_rdma = node.desired["rdma"]
    assert (rdma["stack"], rdma["stack_version"], rdma["tool"]) == (
        want_rdma["stack"],
        want_rdma["version"],
        want_rdma["qos_tool"],
    )
    assert want_rdma["qos_tool"] == ("mlnx_qos" if want_rdma["stack"] == "doca-ofed" else "dcb")
    # pinned packages (test_driver_packages, test_dcgm, test_nccl): the groups the roles install for the
    # node's family are the desired state's, names, versions and epochs unchanged
    want_pkgs = node.pins["packages"]["Debian"]
    assert [{k: v for k, v in g.items() if k != "pin"} for g in gpu["groups"]] == [
        g for g in want_pkgs if g["label"] in ("driver", "fabricmanager", "dcgm")
    ]
    assert nccl["package"] == next(g for g in want_pkgs if g["label"] == "nccl")
    # kernel modules (test_modules): the roles write the boot file the validator reads, for the module it
    # checks; rdma_cm only where the rdma role applies RoCE QoS
    want_mods = {m["name"]: m for m in node.desired["modules"]}
    assert gpu["peermem"] == want_mods["nvidia_peermem"]
    assert [m["name"] for m in rdma["modules"]] == (["rdma_cm"] if node.roce else [])
    # rails: netdev MTU and (RoCE) QoS, as the boot-time script and the per-setting tasks apply them
    rails = {r.index: r for r in node.rails}
    for rail in node.rails:
        d = node.rail_desired(rail.index)
        if node.roce:
            q, qos = d["qos"], _shell_vars(rdma["qos"])
            lines = rdma["qos"].splitlines()
            rail_line = next(ln for ln in lines if ln.startswith(f"RAIL={rail.netdev},"))
            assert int(rail_line.rsplit(",", 1)[1]) == rdma["net_mtu"][str(rail.index)] == d["netdev_mtu"]
            assert qos["QOS_TOOL"] == want_rdma["qos_tool"] and qos["TRUST"] == q["trust"]
            pfc = [i for i, on in enumerate(qos["PFC"].split(",")) if on == "1"]
            assert pfc == q["pfc_priorities"] and int(qos["PRIORITY"]) == q["lossless_priority"]
            dscp_prio = dict(ln.split("=", 1)[1].split(":") for ln in lines if ln.startswith("DSCP_PRIO="))
            assert {k: int(v) for k, v in dscp_prio.items()} == q["dscp2prio"]
            assert qos["ECN"] == ("1" if q["ecn"] else "0")
            assert (int(qos["CNP_DSCP"]), int(qos["CNP_PRIO"])) == (q["cnp_dscp"], q["cnp_priority"])
            assert (int(qos["ROCE_TOS"]), qos["ROCE_MODE"]) == (q["tos"], q["roce_mode"])
            # the CNP files the role writes are the ones the validator reads (rdma.roce_cnp)
            keys = ("CNP_DSCP_PATH=", "CNP_PRIO_PATH=")
            paths = [ln.split("=", 1)[1] for ln in lines if ln.startswith(keys)]
            pci = rails[rail.index].pci
            subst = [p.replace("{netdev}", rail.netdev).replace("{pci}", pci) for p in paths]
            assert subst == [path for _, path, _ in rdma_v.cnp_cmds(node, rail)]
        else:
            assert rdma["ib_mtu"][0] == d["netdev_mtu"] == 4092 and d["port_mtu"] == 4096


TUNING = st.fixed_dictionaries(
    {
        "hugepages": st.tuples(st.sampled_from(["1G", "2M"]), st.integers(0, 33), st.booleans()),
        "cstate_max": st.integers(0, 3),
        "thp": st.sampled_from(["always", "madvise", "never"]),
        "numa_balancing": st.booleans(),
        "iommu": st.sampled_from(["pt", "on", "off"]),
        "mtu": st.sampled_from([1500, 4200, 9000]),
        "ecn": st.booleans(),
        "prio": st.integers(0, 7),
        "dscp": st.sampled_from([24, 26, 34]),
        "cnp_off": st.integers(1, 7),  # the CNP priority differs from the lossless one (spec check)
        "stack": st.sampled_from(["doca-ofed", "inbox"]),
        "governor": st.sampled_from(["performance", "powersave"]),
        "irqbalance": st.booleans(),
        "tuned": st.sampled_from(["latency-performance", "throughput-performance"]),
        "acs": st.booleans(),
    }
)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tunings=st.lists(TUNING, min_size=3, max_size=3))
def test_every_setting_the_roles_render_is_what_the_validators_expect(
    tunings: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp("agree")
    for nodes, rendered in compile_and_render([with_tuning(LAB, t) for t in tunings], out):
        for host, r in rendered.items():
            assert_agree(nodes[host], r)


def test_per_numa_hugepages_end_to_end_on_a_2_numa_sku(tmp_path: Path) -> None:
    """per_numa: the role boots with count / NUMA nodes on each node; the validator expects exactly that
    (it used to expect the full count on each node)."""
    text = LAB.replace("per_numa: false", "per_numa: true")
    ((nodes, rendered),) = compile_and_render([text], tmp_path)
    node = nodes["roce-01"]
    assert node.sku["cpu"]["numa_nodes"] == 2
    assert 'hugepages=0:8,1:8"' in rendered["roce-01"]["os_tuning"]["grub"]
    assert os_tuning.expected_cmdline(node)["hugepages"] == "0:8,1:8"
    total = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"
    per = "/sys/devices/system/node/node{}/hugepages/hugepages-1048576kB/nr_hugepages"
    files = {total: "16", per.format(0): "8", per.format(1): "8"}
    os_tuning.test_hugepages(node, booted(files))
    with pytest.raises(CheckFailed, match=r"expected node0=8, node1=8; found node1=16"):
        os_tuning.test_hugepages(node, booted({**files, per.format(1): "16"}))
    assert_agree(node, rendered["roce-01"])
