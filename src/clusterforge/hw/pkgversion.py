"""Package version ordering of both families: Debian (dpkg) and RPM.

Debian (Debian Policy 5.6.12, dpkg's ``verrevcmp``): ``[epoch:]upstream[-revision]``; the epoch compares as a
number, then upstream and revision each compare by alternating non-digit runs (letters sort before
non-letters, ``~`` before anything, even the end of the string) and digit runs (as numbers).

RPM (rpm's ``rpmvercmp``, used for version and release of an EVR): separators (non-alphanumerics) only split
segments; digit segments compare as numbers and are newer than alpha segments; ``~`` sorts before
anything (pre-releases), ``^`` after the base version but before anything longer (post-release snapshots);
when all shared segments are equal the string with segments left over is newer.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

DEBIAN = "debian"
REDHAT = "redhat"
FAMILIES = (DEBIAN, REDHAT)


# --- Debian -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DebVersion:
    epoch: int
    upstream: str
    revision: str  # "" when the version has no hyphen (native package)


def parse_deb(version: str) -> DebVersion:
    """Split ``[epoch:]upstream[-revision]`` (the revision is after the last hyphen)."""
    v = version.strip()
    if not v or any(c.isspace() for c in v):
        raise ValueError(f"not a Debian version: {version!r}")
    epoch = 0
    if ":" in v:
        head, v = v.split(":", 1)
        if not head.isdigit():
            raise ValueError(f"Debian version epoch is not a number: {version!r}")
        epoch = int(head)
    upstream, _, revision = v.rpartition("-") if "-" in v else (v, "", "")
    if not upstream or not upstream[0].isdigit():
        raise ValueError(f"Debian upstream version must start with a digit: {version!r}")
    return DebVersion(epoch, upstream, revision)


def _deb_order(c: str) -> int:
    if c.isdigit():
        return 0
    if c.isascii() and c.isalpha():
        return ord(c)
    if c == "~":
        return -1
    return ord(c) + 256


def _verrevcmp(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _deb_order(a[i]) if i < len(a) else 0
            bc = _deb_order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i, j = i + 1, j + 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


def deb_compare(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian version ``a`` is older than, equal to or newer than ``b``."""
    va, vb = parse_deb(a), parse_deb(b)
    if va.epoch != vb.epoch:
        return _sign(va.epoch - vb.epoch)
    return _sign(_verrevcmp(va.upstream, vb.upstream) or _verrevcmp(va.revision, vb.revision))


# --- RPM ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RpmEvr:
    epoch: int  # 0 when unset ("(none)")
    version: str
    release: str  # "" when not given


def parse_evr(evr: str) -> RpmEvr:
    """``[epoch:]version[-release]``; an epoch of ``(none)`` (rpm's ``%{EPOCH}`` when unset) is 0."""
    v = evr.strip()
    if not v or any(c.isspace() for c in v):
        raise ValueError(f"not an RPM EVR: {evr!r}")
    epoch = 0
    if ":" in v:
        head, v = v.split(":", 1)
        if head != "(none)":
            if not head.isdigit():
                raise ValueError(f"RPM epoch is not a number: {evr!r}")
            epoch = int(head)
    version, _, release = v.rpartition("-") if "-" in v else (v, "", "")
    if not version:
        raise ValueError(f"RPM EVR has no version: {evr!r}")
    return RpmEvr(epoch, version, release)


def _alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def rpmvercmp(a: str, b: str) -> int:
    """rpm's segment comparison of two version (or release) strings: -1, 0 or 1."""
    if a == b:
        return 0
    one, two = a, b
    while one or two:
        while one and not _alnum(one[0]) and one[0] not in "~^":
            one = one[1:]
        while two and not _alnum(two[0]) and two[0] not in "~^":
            two = two[1:]
        if one.startswith("~") or two.startswith("~"):
            if not one.startswith("~"):
                return 1
            if not two.startswith("~"):
                return -1
            one, two = one[1:], two[1:]
            continue
        if one.startswith("^") or two.startswith("^"):
            if not one:
                return -1
            if not two:
                return 1
            if not one.startswith("^"):
                return 1
            if not two.startswith("^"):
                return -1
            one, two = one[1:], two[1:]
            continue
        if not one or not two:
            break
        isnum = one[0].isdigit()
        pick = str.isdigit if isnum else (lambda c: c.isascii() and c.isalpha())
        n1 = next((k for k, c in enumerate(one) if not pick(c)), len(one))
        n2 = next((k for k, c in enumerate(two) if not pick(c)), len(two))
        seg1, seg2, one, two = one[:n1], two[:n2], one[n1:], two[n2:]
        if not seg2:
            return 1 if isnum else -1
        if isnum:
            seg1, seg2 = seg1.lstrip("0"), seg2.lstrip("0")
            if len(seg1) != len(seg2):
                return 1 if len(seg1) > len(seg2) else -1
        if seg1 != seg2:
            return 1 if seg1 > seg2 else -1
    if not one and not two:
        return 0
    return 1 if one else -1


def rpm_compare(a: str, b: str) -> int:
    """-1, 0 or 1 comparing two RPM EVRs (epoch, then version, then release when both have one)."""
    ea, eb = parse_evr(a), parse_evr(b)
    if ea.epoch != eb.epoch:
        return _sign(ea.epoch - eb.epoch)
    return rpmvercmp(ea.version, eb.version) or (
        rpmvercmp(ea.release, eb.release) if ea.release and eb.release else 0
    )


# --- both ---------------------------------------------------------------------------------------------


def compare(family: str, a: str, b: str) -> int:
    """Order two versions the way the family's package manager does."""
    if family == DEBIAN:
        return deb_compare(a, b)
    if family == REDHAT:
        return rpm_compare(a, b)
    raise ValueError(f"unknown package family {family!r} (expected one of {FAMILIES})")


def upstream(family: str, version: str) -> str:
    """The upstream part: ``1:4.2.3-1`` → ``4.2.3`` (Debian), ``(none):2.26.2-1.el9`` → ``2.26.2`` (RPM)."""
    if family == DEBIAN:
        return parse_deb(version).upstream
    if family == REDHAT:
        return parse_evr(version).version
    raise ValueError(f"unknown package family {family!r} (expected one of {FAMILIES})")


def matches_pin(family: str, version: str, pin: str) -> bool:
    """The installed ``version`` is the pinned release: its upstream part is ``pin`` or starts with
    ``pin.`` (a pin ``2.26`` accepts ``2.26.2``; a pin ``2.26.2`` does not accept ``2.26.20``)."""
    up = upstream(family, version)
    return up == pin or up.startswith(pin + ".")


def matches_package(family: str, installed: str, version: str, epoch: str = "") -> bool:
    """The ``installed`` version is what installing ``version`` (with ``epoch``) leaves, by the roles' rule
    (the clusterforge.node package filters): Debian, apt's ``[epoch:]version*`` glob; RPM, the version
    (and the release when the pin has one) equal, the epoch equal when one is pinned."""
    pinned = version if ":" in version or not epoch else f"{epoch}:{version}"
    if family == DEBIAN:
        return fnmatchcase(installed, pinned + "*")
    if family == REDHAT:
        have, want = parse_evr(installed), parse_evr(pinned)
        if ":" in pinned and have.epoch != want.epoch:
            return False
        return have.version == want.version and (not want.release or have.release == want.release)
    raise ValueError(f"unknown package family {family!r} (expected one of {FAMILIES})")
