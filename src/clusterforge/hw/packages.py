"""Installed-package listings of both families, and the family of a node from ``/etc/os-release``.

* ``dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` (what the validators run),
* ``dpkg -l`` (the human table; bug reports paste it),
* ``rpm -q[a] --qf '%{NAME} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH}\\n' [names]`` (the query format
  vulnerability scanners such as vuls use, so real captures exist; ``%{EPOCHNUM}`` in the epoch column is
  read too) including rpm's ``package X is not installed`` lines for named packages that are absent.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ._common import require_text, split_lines
from .errors import ParseError
from .pkgversion import DEBIAN, REDHAT, parse_deb, parse_evr

#: ID / ID_LIKE words of /etc/os-release -> family
_FAMILY_IDS = {
    "debian": DEBIAN,
    "ubuntu": DEBIAN,
    "rhel": REDHAT,
    "fedora": REDHAT,
    "centos": REDHAT,
    "rocky": REDHAT,
    "almalinux": REDHAT,
    "ol": REDHAT,
    "amzn": REDHAT,
}
#: the listing commands these parsers read (every installed package, one line each)
DPKG_QUERY_CMD = "dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'"
RPM_QUERY_CMD = "rpm -qa --qf '%{NAME} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH}\\n'"
OS_RELEASE_CMD = "cat /etc/os-release"
_DPKG_L_ROW = re.compile(r"^(?P<state>[uihrp][ncHUFWti][R ]?)\s+(?P<name>\S+)\s+(?P<version>\S+)\s")
_RPM_ABSENT = re.compile(r"^package (?P<name>\S+) is not installed$")


@dataclass(frozen=True)
class Packages:
    family: str  # "debian" | "redhat"
    installed: Mapping[str, tuple[str, ...]]  # name (no ":arch") -> every installed version
    not_installed: tuple[str, ...] = ()  # names rpm -q reported absent (or dpkg lists as not installed)
    states: Mapping[str, str] = field(default_factory=dict)  # dpkg: name -> status abbreviation

    def versions(self, name: str) -> tuple[str, ...]:
        return self.installed.get(name, ())


def _add(out: dict[str, list[str]], name: str, version: str) -> None:
    versions = out.setdefault(name.split(":")[0], [])
    if version not in versions:
        versions.append(version)


def parse_dpkg_query(text: str) -> Packages:
    """``dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'``: a package counts as installed
    when its current state (second status letter) is ``i`` (``ii``, held ``hi``); ``rc`` (config files
    left), ``un`` and half-installed states are listed in ``states`` only."""
    tool = "dpkg-query"
    require_text(tool, text)
    installed: dict[str, list[str]] = {}
    states: dict[str, str] = {}
    absent: list[str] = []
    for no, raw in enumerate(split_lines(text), 1):
        if not raw.strip():
            continue
        parts = raw.split("\t")
        if len(parts) != 3 or not parts[0].strip() or len(parts[2].strip()) < 2:
            raise ParseError(tool, "expected package<TAB>version<TAB>status", line_no=no, line=raw)
        name, version, status = (p.strip() for p in parts)
        states[name.split(":")[0]] = status
        if status[1] == "i":
            try:
                parse_deb(version)
            except ValueError as exc:
                raise ParseError(tool, str(exc), line_no=no, line=raw) from None
            _add(installed, name, version)
        elif status[1] == "n":
            absent.append(name.split(":")[0])
    if not states:
        raise ParseError(tool, "no packages listed")
    return Packages(DEBIAN, {k: tuple(v) for k, v in installed.items()}, tuple(absent), states)


def parse_dpkg_l(text: str) -> Packages:
    """``dpkg -l [pattern]``: the ``Desired=...`` header, the ``+++-===`` rule, then one row per package.
    Versions dpkg had to cut to the column width stay as printed (no ``+`` marker tells them apart)."""
    tool = "dpkg -l"
    require_text(tool, text)
    lines = split_lines(text)
    rule = next((i for i, ln in enumerate(lines) if ln.startswith("+++-")), None)
    if rule is None or not any(ln.startswith("Desired=") for ln in lines[:rule]):
        raise ParseError(tool, "no 'Desired=' header and '+++-===' rule - not dpkg -l output")
    installed: dict[str, list[str]] = {}
    states: dict[str, str] = {}
    absent: list[str] = []
    for idx in range(rule + 1, len(lines)):
        raw = lines[idx]
        if not raw.strip():
            continue
        m = _DPKG_L_ROW.match(raw)
        if not m:
            raise ParseError(tool, "unrecognised package row", line_no=idx + 1, line=raw)
        state, name, version = m.group("state").strip(), m.group("name"), m.group("version")
        states[name.split(":")[0]] = state
        if state[1:2] == "i":
            _add(installed, name, version)
        elif state[1:2] == "n":
            absent.append(name.split(":")[0])
    if not states:
        raise ParseError(tool, "no package rows after the header")
    return Packages(DEBIAN, {k: tuple(v) for k, v in installed.items()}, tuple(absent), states)


def parse_rpm_query(text: str) -> Packages:
    """``rpm -q[a] --qf '%{NAME} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH}\\n'``: five words a row (rpm allows
    no blank in a name, version, release or arch). An unset epoch prints ``(none)`` (``%{EPOCHNUM}``: ``0``);
    it is kept as printed and orders as 0. A version reads ``epoch:version-release``; several versions of one
    name (kernels) are all kept, one version for several arches (multilib) once."""
    tool = "rpm -q"
    require_text(tool, text)
    installed: dict[str, list[str]] = {}
    absent: list[str] = []
    for no, raw in enumerate(split_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        if m := _RPM_ABSENT.match(line):
            absent.append(m.group("name"))
            continue
        words = line.split()
        if len(words) != 5:
            raise ParseError(tool, "expected name epoch version release arch", line_no=no, line=raw)
        name, epoch, version, release, _arch = words
        if epoch != "(none)" and not epoch.isdigit():
            raise ParseError(tool, f"epoch {epoch!r} is neither a number nor (none)", line_no=no, line=raw)
        evr_text = f"{epoch}:{version}-{release}"
        try:
            parse_evr(evr_text)
        except ValueError as exc:
            raise ParseError(tool, str(exc), line_no=no, line=raw) from None
        _add(installed, name, evr_text)
    if not installed and not absent:
        raise ParseError(tool, "no packages listed")
    return Packages(REDHAT, {k: tuple(v) for k, v in installed.items()}, tuple(absent))


def listing(family: str) -> tuple[str, Callable[[str], Packages]]:
    """(command, parser) listing every installed package on a node of ``family``."""
    return (RPM_QUERY_CMD, parse_rpm_query) if family == REDHAT else (DPKG_QUERY_CMD, parse_dpkg_query)


def os_family(text: str) -> str:
    """``/etc/os-release`` → ``debian`` or ``redhat`` (from ``ID``, else the first known ``ID_LIKE`` word)."""
    tool = "/etc/os-release"
    require_text(tool, text)
    fields: dict[str, str] = {}
    for raw in split_lines(text):
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        try:
            words = shlex.split(value)
        except ValueError:
            raise ParseError(tool, f"unbalanced quotes in {key}", line=raw) from None
        fields[key.strip()] = " ".join(words)
    ids = [fields.get("ID", ""), *fields.get("ID_LIKE", "").split()]
    for word in ids:
        if word.lower() in _FAMILY_IDS:
            return _FAMILY_IDS[word.lower()]
    raise ParseError(tool, f"unsupported OS: ID={fields.get('ID')!r} ID_LIKE={fields.get('ID_LIKE')!r}")
