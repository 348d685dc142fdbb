"""Software against the plan's pins: driver, CUDA, NCCL, DCGM, RDMA stack, NIC firmware, VBIOS, system BIOS;
time sync. The system BIOS version is read from the node's BMC over Redfish, from the controller. Every pin
and every pinned package (names, version, epoch per OS family) is the node's compiled desired state
(`desired.software`, plan/desired_software.py): what the roles installed from, never derived here.

Packages are read with the node's own package manager, chosen from ``/etc/os-release``: ``dpkg-query`` on
the Debian family, ``rpm -qa`` on the Red Hat family; versions are matched with that family's rules."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from clusterforge.certify import readers, redfish
from clusterforge.certify.checks import CheckError, Probe, expect, expect_equal, expect_none_bad, prefetches
from clusterforge.certify.fixes import hint
from clusterforge.hw import ibstat, mlxfwmanager, ofed_info
from clusterforge.hw.nvidia_smi import NvidiaSmiQ, parse_q
from clusterforge.hw.packages import (
    DPKG_QUERY_CMD,
    OS_RELEASE_CMD,
    RPM_QUERY_CMD,
    Packages,
    listing,
    os_family,
)
from clusterforge.hw.pkgversion import matches_package, matches_pin
from clusterforge.plan.expect import NodeExpect
from clusterforge.remote.commands import argv
from clusterforge.spec import doca

pytestmark = pytest.mark.quick

DPKG, RPM, OS_RELEASE = DPKG_QUERY_CMD, RPM_QUERY_CMD, OS_RELEASE_CMD
OFED_INFO = "ofed_info -s"
#: /etc/os-release family -> the Ansible OS family the desired state's packages are keyed by
ANSIBLE_FAMILY = {"debian": "Debian", "redhat": "RedHat"}
#: software.rdma.stack values: the distribution's rdma-core, or NVIDIA's OFED (DOCA-OFED / MLNX_OFED)
DISTRO_STACKS = ("rdma-core", "inbox")
OFED_STACKS = ("doca-ofed", "mlnx-ofed")
SMI_Q = "nvidia-smi -q"
MAX_OFFSET_S = 0.5


def smi(probe: Probe) -> NvidiaSmiQ:
    return probe.parse(SMI_Q, parse_q)


def family(probe: Probe) -> str:
    return probe.parse(OS_RELEASE, os_family)


def packages(probe: Probe) -> Packages:
    """Every installed package, read with the node's own package manager."""
    return probe.parse(*listing(family(probe)))


def _pins(node: NodeExpect, key: str) -> bool:
    try:
        return bool(node.pins.get(key))
    except KeyError:
        return True


def pinned(key: str) -> Callable[[NodeExpect], bool]:
    """An `applies` predicate: the plan pins ``key``; a plan without pins keeps the check (it errors). A
    lambda: pytest's mark decorator would take a named function as the item it decorates."""
    return lambda node: _pins(node, key)


def package_group(node: NodeExpect, pkgs: Packages, label: str) -> dict[str, Any]:
    """The desired package group ``label`` (packages, version, epoch) of the node's OS family."""
    groups = node.pins["packages"].get(ANSIBLE_FAMILY[pkgs.family]) or []
    group = next((g for g in groups if g.get("label") == label), None)
    if group is None:
        raise CheckError(
            f"the plan pins no {label} packages for the {pkgs.family} family: re-run `clusterforge plan`"
        )
    return dict(group)


def expect_group(node: NodeExpect, probe: Probe, label: str, what: str, fix: str) -> None:
    """Every package of the group installed at the group's version (the roles' matching rule); names each
    package found elsewhere or not installed."""
    pkgs = packages(probe)
    group = package_group(node, pkgs, label)
    version, epoch = str(group["version"]), str(group.get("epoch") or "")
    bad = {
        name: ", ".join(pkgs.versions(name)) or "not installed"
        for name in group["packages"]
        if not any(matches_package(pkgs.family, v, version, epoch) for v in pkgs.versions(name))
    }
    shown = f"{epoch}:{version}" if epoch and ":" not in version else version
    expect_none_bad(what, bad, f"{', '.join(group['packages'])} at {shown}", fix)


def _pinned_package(pkgs: Packages, names: list[str], pin: str) -> tuple[bool, str]:
    """Whether one of ``names`` (exact, or a prefix ending in ``*``) is installed at the pinned version."""
    found = {
        (p, v)
        for p, versions in pkgs.installed.items()
        for v in versions
        if any(p == n or (n.endswith("*") and p.startswith(n[:-1])) for n in names)
    }
    ok = any(matches_pin(pkgs.family, v, pin) for _, v in found)
    return ok, ", ".join(f"{p} {v}" for p, v in sorted(found)) or "not installed"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def test_driver(node: NodeExpect, probe: Probe) -> None:
    pin = node.pins["nvidia_driver"]
    found = smi(probe).driver_version
    expect_equal("NVIDIA driver", pin["version"], found, hint("driver", node.name))


@pytest.mark.applies(lambda n: str(n.knobs.get("nvidia_gpu_driver_source", "package")) == "package")
def test_driver_packages(node: NodeExpect, probe: Probe) -> None:
    """The driver's packages (and the fabric manager's on an NVSwitch SKU) installed at the plan's
    version, as the nvidia_gpu role installs them; a node whose driver comes with its image
    (``nvidia_gpu_driver_source: image``) is not asked."""
    expect_group(node, probe, "driver", "NVIDIA driver packages", hint("driver", node.name))
    if node.nvswitch:
        expect_group(
            node, probe, "fabricmanager", "fabric manager packages", hint("fabricmanager", node.name)
        )


def test_cuda(node: NodeExpect, probe: Probe) -> None:
    """The driver runs the pinned CUDA (its CUDA version >= the pin); a CUDA toolkit installed on the node,
    if any, is the pinned one (jobs usually bring their own toolkit in a container)."""
    pin = node.pins["cuda"]
    major, minor = pin.split(".")
    supported = smi(probe).cuda_version or "unknown"
    ok = supported != "unknown" and tuple(map(int, supported.split(".")[:2])) >= (int(major), int(minor))
    expect(ok, "CUDA version the driver supports", f">= {pin}", supported, hint("driver", node.name))
    toolkits = {
        p: ", ".join(v)
        for p, v in packages(probe).installed.items()
        if p.startswith(("cuda-toolkit-", "cuda-runtime-", "cuda-cudart-")) and p[-1].isdigit()
    }
    other = {p: v for p, v in toolkits.items() if not p.endswith(f"-{major}-{minor}")}
    expect_none_bad(
        "installed CUDA toolkits",
        other,
        f"only CUDA {pin} ({major}-{minor}) packages",
        hint("cuda", node.name),
    )


def test_nccl(node: NodeExpect, probe: Probe) -> None:
    expect_group(node, probe, "nccl", f"NCCL {node.pins['nccl']}", hint("nccl", node.name))


def test_dcgm(node: NodeExpect, probe: Probe) -> None:
    expect_group(node, probe, "dcgm", f"DCGM {node.pins['dcgm']}", hint("dcgm", node.name))


def test_rdma(node: NodeExpect, probe: Probe) -> None:
    """The pinned RDMA stack: the distribution's ``rdma-core`` package at the pin; for DOCA-OFED, the
    version ``ofed_info -s`` prints against the DOCA-OFED version of the pinned DOCA-Host release
    (``clusterforge.spec.doca``: ``2.10.0`` → ``25.01-0.6.0``, and the ``doca-ofed`` profile package at the
    release) or the pinned DOCA-OFED version itself (a leading part such as ``25.10`` matches); MLNX_OFED:
    ``ofed_info -s`` against the pin."""
    pin = node.desired["rdma"]
    stack, version = pin.get("stack"), str(pin["version"])
    if stack in DISTRO_STACKS:
        ok, found = _pinned_package(packages(probe), ["rdma-core"], version)
        expect(ok, "rdma-core", version, found, hint("rdma_core", node.name))
        return
    if stack not in OFED_STACKS:
        raise CheckError(f"unknown RDMA stack {stack!r} in the plan (expected {DISTRO_STACKS + OFED_STACKS})")
    want = doca.expected_ofed(version) if stack == "doca-ofed" else version
    if want is None:  # the spec check rejects it; a plan.json edited by hand may still carry one
        raise CheckError(
            f"DOCA-Host {version} is not in clusterforge's DOCA table "
            "(src/clusterforge/spec/catalog/software/doca.yaml): the DOCA-OFED version it installs is unknown"
        )
    info = probe.parse(OFED_INFO, ofed_info.parse)  # missing ofed_info: error, naming the tool
    ok_pkg, pkg_found = _pinned_package(packages(probe), ["doca-ofed"], version)
    release = stack == "doca-ofed" and version in doca.releases()  # then its profile package at the pin too
    expect(
        info.matches(want) and (ok_pkg or not release),
        f"{stack} ({OFED_INFO})",
        want if want == version else f"{want} (DOCA-OFED of DOCA-Host {version})",
        f"{info.flavour}-{info.version}; package {pkg_found}",
        hint("rdma_stack", node.name),
    )


#: whether MFT's mlxfwmanager is on the node (its path, or nothing; never a missing-tool error)
MLXFW_PRESENT = "command -v mlxfwmanager || true"


def mlxfw_query(pci: str) -> str:
    return argv("mlxfwmanager", "--query", "-d", pci)


def _firmware_by_mlxfwmanager(node: NodeExpect, probe: Probe) -> dict[str, str] | None:
    """Each rail HCA's running firmware from ``mlxfwmanager --query -d <pci>`` (MFT), or None when MFT is
    not installed or a rail has no PCI address in the plan (then ``ibstat`` is read)."""
    if not probe.run(MLXFW_PRESENT).strip() or not all(r.pci for r in node.rails):
        return None
    found = {}
    for r in node.rails:
        devices = probe.parse(mlxfw_query(r.pci), mlxfwmanager.parse)
        if len(devices) != 1:
            raise CheckError(
                f"mlxfwmanager --query -d {r.pci} ({r.hca}) listed {len(devices)} devices, not 1"
            )
        found[r.hca] = devices[0].firmware
    return found


@pytest.mark.applies(pinned("nic_firmware"))
def test_nic_firmware(node: NodeExpect, probe: Probe) -> None:
    """Every rail HCA runs the pinned firmware: read with MFT's ``mlxfwmanager --query`` when it is installed
    (the rdma role installs MFT with DOCA-OFED), else from ``ibstat``; the source is named."""
    pin = node.pins["nic_firmware"]
    found = _firmware_by_mlxfwmanager(node, probe)
    source = "mlxfwmanager --query"
    if found is None:
        source = "ibstat (mlxfwmanager not installed)"
        cas = {ca.name: ca for ca in probe.parse("ibstat", ibstat.parse)}
        found = {r.hca: (cas[r.hca].firmware_version if r.hca in cas else "absent") for r in node.rails}
    probe.note("nic_firmware_source", source)
    bad = {hca: fw for hca, fw in found.items() if fw != pin}
    expect_none_bad(
        f"compute NIC firmware ({source})", bad, f"{pin} on every rail HCA", hint("nic_firmware", node.name)
    )


@pytest.mark.applies(pinned("vbios"))
def test_vbios(node: NodeExpect, probe: Probe) -> None:
    pin = node.pins["vbios"]
    bad = {g.bus_id: g.vbios_version for g in smi(probe).gpus if g.vbios_version != pin}
    expect_none_bad("GPU VBIOS", bad, f"{pin} on every GPU", hint("vbios", node.name))


@pytest.mark.bmc
@pytest.mark.applies(pinned("bios"))
def test_bios(node: NodeExpect) -> None:
    """``software.bios`` against the ``BiosVersion`` of the node's ComputerSystem, read from its BMC over
    Redfish with the bios role's account (a node with the pin but no BMC in the spec is an error)."""
    redfish.check_bios_version(node)


CHRONY_UNITS = ("chrony.service", "chronyd.service")


def chrony_show(unit: str) -> str:
    return argv("systemctl", "show", "-p", readers.UNIT_PROPS, unit)


CHRONY_CONF = (
    "cat /etc/chrony/chrony.conf /etc/chrony/conf.d/*.conf /etc/chrony/sources.d/*.sources "
    "/etc/chrony.conf 2>/dev/null; true"
)
VIRT = "systemd-detect-virt --container"


@prefetches
def commands(node: NodeExpect) -> list[str]:
    ofed = [OFED_INFO] if node.desired_state.get("rdma", {}).get("stack") in OFED_STACKS else []
    return [
        SMI_Q, OS_RELEASE, DPKG, RPM, *ofed, "ibstat", MLXFW_PRESENT, CHRONY_CONF,
        *(chrony_show(u) for u in CHRONY_UNITS), VIRT,
    ]  # fmt: skip


def _chrony_unit(probe: Probe) -> tuple[str, dict[str, str]]:
    for unit in CHRONY_UNITS:
        show = probe.parse(chrony_show(unit), readers.systemctl_show)
        if show.get("LoadState") == "loaded":
            return unit, show
    raise CheckError("no chrony unit (chrony.service / chronyd.service) is loaded")


def _configured_servers(probe: Probe) -> list[str]:
    out = probe.run(CHRONY_CONF)
    return [
        ln.split()[1]
        for ln in out.splitlines()
        if ln.split()[:1] in (["server"], ["pool"]) and len(ln.split()) > 1
    ]


def test_time_sync(node: NodeExpect, probe: Probe) -> None:
    """chrony uses the declared servers and is in sync (leap Normal, |offset| <= 0.5 s, a declared server
    selected). A container cannot own its clock: chrony's unit skips itself there (ConditionCapability=
    CAP_SYS_TIME) and the clock is the container host's; then only the configuration is checked."""
    servers = [str(s) for s in node.desired["time"]["servers"]]
    fix = hint("time", node.name)
    configured = _configured_servers(probe)
    expect(
        all(s in configured for s in servers),
        "chrony servers",
        ", ".join(servers) or "any",
        ", ".join(configured) or "none configured",
        fix,
    )
    unit, show = _chrony_unit(probe)
    if show.get("ActiveState") != "active":
        skipped = readers.unit_skipped(show)
        virt = probe.run(VIRT, ok=(0, 1)).strip()
        expect(
            skipped and virt not in ("", "none"),
            unit,
            "active (or skipped by its conditions in a container)",
            f"{show.get('ActiveState')}, ConditionResult={show.get('ConditionResult')}, container={virt}",
            fix,
        )
        probe.note("clock", f"owned by the container host ({virt}); {unit} skipped by its start conditions")
        return
    tracking = probe.parse("chronyc -n tracking", readers.chrony_tracking)
    sources = probe.parse("chronyc -n sources", readers.chrony_sources)
    probe.note("tracking", tracking.__dict__)
    expect(
        tracking.leap == "Normal" and abs(tracking.offset_s) <= MAX_OFFSET_S,
        "time sync",
        f"leap status Normal, |offset| <= {MAX_OFFSET_S} s",
        f"leap {tracking.leap}, offset {tracking.offset_s:+.3f} s",
        fix,
    )
    selected = [s for s, state in sources.items() if state in "*+"]
    literal = [s for s in servers if _is_ip(s)]
    expect(
        any(s in selected for s in literal) if literal else bool(selected),
        "time source",
        f"one of {', '.join(literal)} selected" if literal else "a selected source",
        ", ".join(f"{s}({st.strip() or '-'})" for s, st in sources.items()) or "no sources",
        fix,
    )
