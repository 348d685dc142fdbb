"""Values are data in what the roles write to nodes: a rendered value can never add a line (a chrony or
NCCL directive, a rail) or reach a shell, and the boot scripts read their configuration as data, never
`source` it: a configuration line that does not fit its pattern stops the script before it runs anything.
The scripts run for real here, with recording stand-ins for the tools (`mlnx_qos`, `ip`, `setpci` …)."""

from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import HERE, INVENTORY
from .test_templates import DEBIAN, render

CANARY = "/tmp/cf-roles-values-canary"
INJECT = [
    f"$(touch {CANARY})",
    f"x;touch {CANARY}",
    "a\nRAIL=evil,mlx5_9,1,-",
    "sp ace",
    "-x",
    "a,b",
]
RAIL = {
    "index": 0,
    "hca": "mlx5_0",
    "port": 1,
    "netdev": "enp24s0np0",
    "pci": "0000:18:00.0",
    "gpu": 0,
    "numa": 0,
    "ip": "10.245.0.11",
    "prefix": 24,
    "mtu": 9000,
    "link_layer": "Ethernet",
    "speed_gbps": 400,
}


def render_fails(role: str, template: str, variables: dict) -> str:
    """Render expecting a refusal; returns the error text."""
    req = {"templates": {"t": template}, "expressions": {}, "vars": variables}
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "helpers" / "render.py"),
            str(INVENTORY),
            "roce-01",
            role,
            "Debian",
            json.dumps(DEBIAN),
            json.dumps(req),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0, f"rendered: {proc.stdout[-2000:]}"
    return proc.stderr


@pytest.fixture
def clean() -> object:
    Path(CANARY).unlink(missing_ok=True)
    yield None
    assert not Path(CANARY).exists(), "a value was executed"


# -- templates refuse what would change the file's meaning ----------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [("netdev", v) for v in INJECT]
    + [("hca", INJECT[0]), ("hca", "-x"), ("pci", INJECT[2]), ("pci", "18:00")],
)
def test_roce_qos_conf_refuses_odd_rail_values(field: str, value: str) -> None:
    err = render_fails(
        "rdma", "templates/roce-qos.conf.j2", {"clusterforge_rails": [dict(RAIL, **{field: value})]}
    )
    assert "is not a valid" in err


@pytest.mark.parametrize(
    ("role", "template", "variables"),
    [
        ("os_tuning", "templates/chrony.conf.j2", {"_os_tuning_time_servers": ["ntp.example\nallow all"]}),
        (
            "os_tuning",
            "templates/chrony.conf.j2",
            {"_os_tuning_time_servers": ["ntp.example iburst maxpoll 1"]},
        ),
        ("nccl", "templates/nccl.conf.j2", {"nccl_socket_ifname": "mgmt0\nNCCL_DEBUG_FILE=/etc/x"}),
        ("nccl", "templates/nccl.conf.j2", {"nccl_extra_env": {"A\nB": 1}}),
        (
            "rdma",
            "templates/90-clusterforge-roce-qos.rules.j2",
            {"clusterforge_rails": [dict(RAIL, netdev='x", RUN+="/bin/sh')]},
        ),
        (
            "nvidia_gpu",
            "templates/acs.conf.j2",
            {"nvidia_gpu_acs_nic_pci": ["0000:18:00.0\nSCOPE=all_bridges"]},
        ),
        ("os_tuning", "templates/os-tuning.conf.j2", {"_os_tuning_thp": "never\nGOVERNOR=x"}),
        (
            "os_tuning",
            "templates/grub-clusterforge.cfg.j2",
            {"os_tuning_cmdline_extra": ['x"$(touch /tmp/p)"']},
        ),
    ],
)
def test_templates_refuse_new_lines_and_syntax(role: str, template: str, variables: dict) -> None:
    assert "is not a valid" in render_fails(role, template, variables)


def test_good_time_servers_render_as_given() -> None:
    servers = ["10.0.0.1", "2001:db8::1", "time-1.example.org"]
    out = render(
        "os_tuning",
        templates={"c": "templates/chrony.conf.j2"},
        variables={"_os_tuning_time_servers": servers},
    )
    assert [ln for ln in out["c"].splitlines() if ln.startswith("server ")] == [
        f"server {s} iburst" for s in servers
    ]


# -- boot scripts read data -----------------------------------------------------------------------------
def fake_tools(d: Path, names: list[str]) -> Path:
    """Tools that record their argv (one JSON line each) and print nothing."""
    d.mkdir(exist_ok=True)
    for name in names:
        f = d / name
        f.write_text(
            f"#!{sys.executable}\nimport json, os, sys\n"
            "argv = [os.path.basename(sys.argv[0]), *sys.argv[1:]]\n"
            "open(os.environ['CF_LOG'], 'a').write(json.dumps(argv) + '\\n')\n"
        )
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return d


@functools.cache
def rendered(role: str, template: str) -> str:
    return str(render(role, templates={"s": template})["s"])


def boot_script(
    tmp: Path, role: str, template: str, conf_path: str, conf: str, *args: str
) -> tuple[int, str, list]:
    """Render the role's boot script, point it at ``conf`` (and /sys/class/net at a folder here), run it."""
    text = rendered(role, template)
    (tmp / "net").mkdir(exist_ok=True)
    text = text.replace(f"conf={conf_path}", f"conf={tmp / 'conf'}").replace("/sys/class/net/", f"{tmp}/net/")
    (tmp / "conf").write_text(conf)
    (tmp / "s.sh").write_text(text)
    bin_dir = fake_tools(
        tmp / "bin", ["mlnx_qos", "dcb", "ip", "modprobe", "mount", "mountpoint", "setpci", "lspci"]
    )
    log = tmp / "log"
    p = subprocess.run(
        ["bash", str(tmp / "s.sh"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", CF_LOG=str(log)),
    )
    calls = [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []
    return p.returncode, p.stdout + p.stderr, calls


QOS = ("rdma", "templates/clusterforge-roce-qos.sh.j2", "/etc/clusterforge/roce-qos.conf")
GOOD_QOS = "TRUST=dscp\nPFC=0,0,0,1,0,0,0,0\nPRIORITY=3\nDSCP_PRIO=26:3\nECN=1\nECN_MISSING=warn\nWAIT_S=0\n"


def test_roce_qos_script_passes_rail_values_literally(tmp_path: Path, clean: object) -> None:
    netdev = "a-b.c@d+1"  # odd but valid: reaches the tools as one argument
    (tmp_path / "net" / netdev).mkdir(parents=True)
    _rc, out, calls = boot_script(tmp_path, *QOS, GOOD_QOS + f"RAIL={netdev},mlx5_0,1,-,9000\n", "--check")
    assert ["mlnx_qos", "-i", netdev] in calls, (out, calls)
    assert ["ip", "-o", "link", "show", "dev", netdev] in calls
    assert f"DRIFT {netdev} trust before=none after=dscp" in out
    assert f"DRIFT {netdev} mtu before=none after=9000" in out


def test_roce_qos_script_with_dcb_passes_values_literally(tmp_path: Path, clean: object) -> None:
    """QOS_TOOL=dcb: PFC, the DSCP APP entries and (where dcb has apptrust) trust, each value one argument."""
    netdev = "a-b.c@d+1"
    (tmp_path / "net" / netdev).mkdir(parents=True)
    conf = "QOS_TOOL=dcb\n" + GOOD_QOS + f"RAIL={netdev},mlx5_0,1,-,9000\n"
    _rc, out, calls = boot_script(tmp_path, *QOS, conf, "--apply", "--qos-only")
    assert ["dcb", "pfc", "show", "dev", netdev, "prio-pfc"] in calls, (out, calls)
    on_off = [f"{p}:{'on' if p == 3 else 'off'}" for p in range(8)]
    assert ["dcb", "pfc", "set", "dev", netdev, "prio-pfc", *on_off] in calls
    assert ["dcb", "app", "replace", "dev", netdev, "dscp-prio", "26:3"] in calls
    assert ["dcb", "apptrust", "set", "dev", netdev, "order", "dscp"] in calls  # the fake dcb has apptrust
    assert not any(c[0] in ("mlnx_qos", "ip") for c in calls)  # --qos-only: no MTU, and no mlnx_qos


@pytest.mark.parametrize(
    "line",
    [
        f'RAILS="$(touch {CANARY}),mlx5_0,1,-"',  # the old sourced format
        f"RAIL=$(touch {CANARY}),mlx5_0,1,-,9000",
        f"RAIL=eth0;touch {CANARY},mlx5_0,1,-,9000",
        "RAIL=-x,mlx5_0,1,-,9000",
        "RAIL=eth0,mlx5_0,1,-",
        "DSCP_PRIO=26:9",
        f"QOS_TOOL=sh -c 'touch {CANARY}'",
        "RAIL=eth0,mlx5_0,1,-,extra",
        f"TRUST=dscp;touch {CANARY}",
        f"ROCE_MODE=`touch {CANARY}`",
        "CNP_DSCP_PATH=relative/path",
        f"PATH=/tmp;touch {CANARY}",
        "no equals sign",
    ],
)
def test_roce_qos_script_refuses_bad_lines_before_anything(tmp_path: Path, line: str, clean: object) -> None:
    (tmp_path / "net" / "eth0").mkdir(parents=True)
    conf = GOOD_QOS + "RAIL=eth0,mlx5_0,1,-,9000\n" + line + "\n"
    rc, out, calls = boot_script(tmp_path, *QOS, conf, "--apply")
    assert rc == 2 and "ERROR" in out and calls == [], (rc, out, calls)


TUNING = ("os_tuning", "templates/clusterforge-os-tuning.sh.j2", "/etc/clusterforge/os-tuning.conf")
ACS = ("nvidia_gpu", "templates/clusterforge-acs.sh.j2", "/etc/clusterforge/acs.conf")


@pytest.mark.parametrize(
    ("script", "conf", "args"),
    [
        (TUNING, f"GOVERNOR=$(touch {CANARY})\n", ["--check"]),
        (TUNING, "THP=never\nCSTATE_MAX=1 2\n", ["--check"]),
        (TUNING, f'GOVERNOR="performance"; touch {CANARY}\n', ["--check"]),
        (ACS, f"NIC_PCI=$(touch {CANARY})\n", ["--status"]),
        (ACS, "NIC_PCI=0000:18:00.0 *\n", ["--status"]),
        (ACS, "SCOPE=all_bridges;x\n", ["--status"]),
    ],
)
def test_other_boot_scripts_refuse_bad_lines(
    tmp_path: Path, script: tuple, conf: str, args: list, clean: object
) -> None:
    rc, out, calls = boot_script(tmp_path, *script, conf, *args)
    assert rc == 2 and "ERROR" in out and calls == [], (rc, out, calls)


def test_acs_script_reads_nic_list_as_data(tmp_path: Path, clean: object) -> None:
    rc, out, calls = boot_script(tmp_path, *ACS, "SCOPE=all_bridges\nNIC_PCI=0000:18:00.0\n", "--status")
    assert rc == 0 and out.strip() == "none" and ["lspci", "-D", "-n", "-d", "::0604"] in calls


# -- the roles refuse such values before they change anything (validate.yml) ---------------------------
def _asserts(role: str, index: int) -> dict[str, str]:
    import yaml

    tasks = yaml.safe_load((HERE.parents[2] / "playbooks/roles" / role / "tasks/validate.yml").read_text())
    return {str(i): "{{ " + t + " }}" for i, t in enumerate(tasks[index]["ansible.builtin.assert"]["that"])}


def test_rdma_validation_refuses_odd_rail_names() -> None:
    names = _asserts("rdma", 1)
    assert set(render("rdma", expressions=names).values()) == {True}
    for field, value in (("netdev", "eth0\n"), ("netdev", "-x"), ("hca", "mlx5 0"), ("pci", "18:00")):
        out = render(
            "rdma", expressions=names, variables={"clusterforge_rails": [dict(RAIL, **{field: value})]}
        )
        assert False in out.values(), (field, value)


def test_os_tuning_validation_refuses_odd_time_servers() -> None:
    check = {"t": _asserts("os_tuning", 0)[str(len(_asserts("os_tuning", 0)) - 1)]}
    assert render("os_tuning", expressions=check, variables={"_os_tuning_time_servers": ["2001:db8::1"]})["t"]
    assert not render(
        "os_tuning", expressions=check, variables={"_os_tuning_time_servers": ["a\nallow all"]}
    )["t"]
