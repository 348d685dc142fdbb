# Copyright: clusterforge contributors
# Apache-2.0
"""Filters for the clusterforge roles: kernel command line comparison, NVIDIA package specs, and checked
values for the files the roles render (a value is data: it can never add a line, a directive or shell
syntax to a configuration file or a boot script's input)."""

from __future__ import annotations

import fnmatch
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.clusterforge.node.plugins.module_utils import cmdline as _cmdline


def cmdline_missing(current, desired):
    """Desired kernel parameters not in effect in ``current`` (string or token list).

    A single-valued parameter counts when its *last* occurrence has the desired value (the kernel applies
    parameters in order); ``hugepagesz=X hugepages=N`` must appear as an adjacent pair.
    """
    return _cmdline.missing(current, desired)


def cmdline_stale(current, desired, managed_keys):
    """Parameters in ``current`` with a key the role manages that the desired set no longer contains
    (e.g. ``hugepages=16`` after the hugepage count went to 0)."""
    return _cmdline.stale(current, desired, managed_keys)


def apt_version_pattern(version, epoch=""):
    """apt/dpkg version pattern for ``pkg=<pattern>`` and apt preferences ``Pin: version <pattern>``.

    ``570.133.20`` -> ``570.133.20*``; with epoch ``1`` -> ``1:570.133.20*`` (dpkg versions carry the epoch).
    """
    if version is None or str(version).strip() == "":
        raise AnsibleFilterError("apt_version_pattern: empty version")
    version = str(version).strip()
    epoch = "" if epoch is None else str(epoch).strip()
    if ":" in version or not epoch:
        return "%s*" % version
    return "%s:%s*" % (epoch, version)


def package_specs(packages, version, family, epoch=""):
    """Package specs that install exactly ``version`` of each package with the family's package manager.

    Debian family (apt): ``name=<epoch:>version*`` (apt matches the version with fnmatch, so the Debian
    revision such as ``-0ubuntu1`` is accepted). RedHat family (dnf): ``name-<epoch:>version`` (a dnf
    NEVRA spec without release/arch, e.g. ``nvidia-driver-3:570.133.20``). ``version`` empty -> bare names.
    """
    if isinstance(packages, str):
        packages = [packages]
    if not isinstance(packages, (list, tuple)):
        raise AnsibleFilterError("package_specs: packages must be a list of names")
    family = str(family)
    version = "" if version is None else str(version).strip()
    epoch = "" if epoch is None else str(epoch).strip()
    specs = []
    for name in packages:
        name = str(name).strip()
        if not name:
            continue
        if not version:
            specs.append(name)
        elif family == "Debian":
            specs.append("%s=%s" % (name, apt_version_pattern(version, epoch)))
        elif family == "RedHat":
            specs.append("%s-%s%s" % (name, "%s:" % epoch if epoch and ":" not in version else "", version))
        else:
            raise AnsibleFilterError("package_specs: unsupported OS family %r" % family)
    return specs



def packages_missing(packages, installed, version="", family="Debian", epoch=""):
    """The names in ``packages`` that ``installed`` (``ansible_facts.packages`` of package_facts) does not
    show at ``version`` -- what an install task with :func:`package_specs` would still have to do.

    Lets a role skip its package task on a node that already has everything (one package_facts read per
    run instead of one package-manager start per task). It errs towards "missing": no facts, an unknown
    family or an ambiguous version give every name back, so the install task runs and decides itself.
    """
    items = [packages] if isinstance(packages, (str, dict)) else list(packages or [])
    pins = []  # (name, version, epoch): a dict item {package|name, version, epoch} carries its own pin
    for item in items:
        if isinstance(item, dict):
            name = str(item.get("package") or item.get("name") or "").strip()
            pins.append((name, str(item.get("version") or "").strip(), str(item.get("epoch") or "").strip()))
        else:
            pins.append((str(item).strip(), "" if version is None else str(version).strip(), epoch))
    pins = [p for p in pins if p[0]]
    if not isinstance(installed, dict):
        return [p[0] for p in pins]
    missing = []
    for name, version, epoch in pins:
        epoch = "" if epoch is None else str(epoch).strip()
        found = installed.get(name) or []
        if not version:
            ok = bool(found)
        elif family == "Debian":
            pattern = apt_version_pattern(version, epoch)
            ok = any(fnmatch.fnmatchcase(str(p.get("version", "")), pattern) for p in found)
        elif family == "RedHat":
            want_epoch = epoch or (version.split(":", 1)[0] if ":" in version else "")
            want_version = version.split(":", 1)[1] if ":" in version else version
            # a pin with a release (``2.26.2-1+cuda12.8``) is compared with version-release
            with_release = "-" in want_version
            ok = any(
                (
                    "%s-%s" % (p.get("version", ""), p.get("release", ""))
                    if with_release
                    else str(p.get("version", ""))
                )
                == want_version
                and (not want_epoch or str(p.get("epoch") or "") == want_epoch)
                for p in found
            )
        else:
            ok = False
        if not ok:
            missing.append(name)
    return missing


#: what a value rendered into a node file may look like, by kind (the boot scripts check the same patterns)
VALUE_PATTERNS = {
    # Linux interface name (IFNAMSIZ 16: at most 15 characters; no '/', ':' or whitespace); no leading '-'
    "netdev": r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,14}",
    # RDMA device name (mlx5_0, rocep24s0f0, irdma0)
    "hca": r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}",
    # PCI address, with or without the domain
    "pci": r"(?:[0-9A-Fa-f]{4}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]",
    # host name or IPv4/IPv6 address (chrony `server`)
    "host": r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*",
    # an absolute path, {netdev}/{pci} placeholders allowed
    "path": r"/[A-Za-z0-9_./{}@+-]*",
    # a kernel command-line parameter (it lands in GRUB_CMDLINE_LINUX="...", which update-grub sources)
    "kparam": r"[A-Za-z0-9_.,:=/+@-]+",
    # an environment variable name (nccl.conf)
    "name": r"[A-Za-z_][A-Za-z0-9_]*",
    # storage (plan/desired_storage.py): a mount option, a mount source (NFS host:/export, Lustre NIDs,
    # Weka backends/fs, a GPFS name, a JuiceFS metadata URL), a block device, a mount point
    "mountopt": r"[A-Za-z0-9_][A-Za-z0-9_.:/@+=-]{0,199}",
    "mountsrc": r"[A-Za-z0-9_/][A-Za-z0-9_.:/@%+=,~-]{0,599}",
    "device": r"/dev/[A-Za-z0-9_.:/-]+",
    "mountpoint": r"(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+",
    # a systemd unit name (systemd-escape writes '-' in a path component as \x2d)
    "unit": r"[A-Za-z0-9_:@\\][A-Za-z0-9_.:@\\-]*\.(mount|service|target)",
    # one line of text: no control characters (newline, carriage return, NUL, escape …)
    "line": r"[^\x00-\x1f\x7f]*",
}


def cf_checked(value, kind, what="value"):
    """``value`` (as a string) when it is a valid ``kind`` (see VALUE_PATTERNS), else a task error naming it.

    ``{{ r.netdev | clusterforge.node.cf_checked('netdev', 'rail netdev') }}``."""
    pattern = VALUE_PATTERNS.get(kind)
    if pattern is None:
        raise AnsibleFilterError("cf_checked: unknown kind %r" % (kind,))
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise AnsibleFilterError("%s: expected a %s, found %r (%s)" % (what, kind, value, type(value).__name__))
    text = str(value)
    if not re.fullmatch(pattern, text):
        raise AnsibleFilterError("%s: %r is not a valid %s (expected %s)" % (what, text, kind, pattern))
    return text


def nvidia_desired_problems(software, family, labels):
    """What the plan's NVIDIA pins (clusterforge_desired.software) lack for a node of OS family that
    installs the package groups labels (driver, fabricmanager, dcgm): [] when the plan is current.

    The one statement of the rule in the playbooks: preflight asks it before any role changes anything, the
    nvidia_gpu role again when it starts (a hand-edited inventory; the spec check refuses such a spec first).
    The driver must be on its branch (570.133.20 on 570); the family must have a group for each
    label; the driver and fabric manager groups must be pinned at the driver's version."""
    software = software if isinstance(software, dict) else {}
    driver = software.get("nvidia_driver") if isinstance(software.get("nvidia_driver"), dict) else {}
    version, branch = str(driver.get("version") or ""), str(driver.get("branch") or "")
    out = []
    if not version:
        out.append("no pinned driver (software.nvidia_driver)")
    elif not version.startswith(branch + "."):
        out.append("driver %s is not on branch %s" % (version, branch))
    packages = software.get("packages") if isinstance(software.get("packages"), dict) else {}
    if labels and family not in packages:
        out.append(
            "the plan pins no NVIDIA packages for OS family %s (it has: %s)" % (family, ", ".join(sorted(packages)))
        )
        return out
    groups = {g.get("label"): str(g.get("version")) for g in packages.get(family) or [] if isinstance(g, dict)}
    for label in labels:
        if label not in groups:
            out.append("no pinned %s packages for %s" % (label, family))
        elif label in ("driver", "fabricmanager") and version and groups[label] != version:
            out.append("%s packages pinned at %s, not the driver %s" % (label, groups[label], version))
    return out


class FilterModule:
    def filters(self):
        return {
            "cmdline_missing": cmdline_missing,
            "cmdline_stale": cmdline_stale,
            "apt_version_pattern": apt_version_pattern,
            "package_specs": package_specs,
            "packages_missing": packages_missing,
            "cf_checked": cf_checked,
            "nvidia_desired_problems": nvidia_desired_problems,
        }
