# Copyright: clusterforge contributors
# Apache-2.0
"""Filters for the clusterforge roles: kernel command line comparison and NVIDIA package specs."""

from __future__ import annotations

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


class FilterModule:
    def filters(self):
        return {
            "cmdline_missing": cmdline_missing,
            "cmdline_stale": cmdline_stale,
            "apt_version_pattern": apt_version_pattern,
            "package_specs": package_specs,
        }
