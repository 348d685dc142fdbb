"""Runs ON THE NODE, as the program of `python3 -` (standard library only; Python 3.9+, RHEL 9's platform
Python): reads the state of what a provision manages and prints it as one JSON document.

Query (JSON, appended by `clusterforge.remote.node_state` as a Python string literal, never as shell
text): ``{"files": [paths], "packages": [names], "services": [units], "modules": [names]}``.

Output: ``{"files": {path: {"sha256", "mode", "owner", "group"} | null}, "packages": {name: {"version",
"hold"} | null}, "services": {unit: {"active", "enabled"}}, "modules": {name: loaded}, "errors": [..]}``;
null = absent. A tool that is missing or fails is an entry in `errors`, never an absent package.
"""

from __future__ import annotations

import fnmatch
import grp
import hashlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from typing import Any

TIMEOUT_S = 60


def _owner(uid: int, lookup: Callable[[int], Any]) -> str:
    try:
        return str(lookup(uid)[0])
    except KeyError:
        return str(uid)


def read_file(path: str) -> dict[str, str] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return {
        "sha256": h.hexdigest(),
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "owner": _owner(st.st_uid, pwd.getpwuid),
        "group": _owner(st.st_gid, grp.getgrgid),
    }


def _run(argv: list[str]) -> tuple[int, str, str]:
    p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S, check=False)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def read_packages(names: list[str], errors: list[str]) -> dict[str, Any]:
    """name -> {version, hold} or None (not installed). dpkg: hold from the selection state; rpm: hold =
    a dnf versionlock entry holds the installed version (None where the lock list cannot be read)."""
    out: dict[str, Any] = dict.fromkeys(names)
    if not names:
        return out
    if shutil.which("dpkg-query"):
        # ${db:Status-Abbrev}: "hi " = hold/installed, "ii " = install/installed, "rc " = removed
        fmt = "${Package}\t${Version}\t${db:Status-Abbrev}\n"
        rc, text, err = _run(["dpkg-query", "-W", "-f", fmt, "--", *names])
        if rc not in (0, 1):
            errors.append(f"dpkg-query exit {rc}: {err.strip()[:200]}")
            return out
        for line in text.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[0] in out and parts[2][1:2] == "i":
                out[parts[0]] = {"version": parts[1], "hold": parts[2][:1] == "h"}
        return out
    if shutil.which("rpm"):
        locks = read_versionlock(errors)
        rc, text, err = _run(["rpm", "-q", "--qf", RPM_QF, "--", *names])
        rows = rpm_rows(text)
        if rc != 0 and not rows and "is not installed" not in text:
            errors.append(f"rpm -q exit {rc}: {err.strip()[:200]}")
            return out
        for name, (evr, arch) in rows.items():
            if name in out:
                hold = None if locks is None else locked(locks, name, evr, arch)
                out[name] = {"version": evr, "hold": hold}
        return out
    errors.append("neither dpkg-query nor rpm found: packages not read")
    return out


#: the query format vuls and other scanners use (real captures exist: clusterforge.hw.packages' tests)
RPM_QF = "%{NAME} %{EPOCHNUM} %{VERSION} %{RELEASE} %{ARCH}\n"


def rpm_rows(text: str) -> dict[str, tuple[str, str]]:
    """``rpm -q --qf RPM_QF names…`` → name -> (``epoch:version-release``, arch); the last row of a name
    with several installed versions (the newest install, as rpm lists them); ``package X is not installed``
    and any other line are not rows."""
    rows: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 5 and words[1].isdigit():
            name, epoch, version, release, arch = words
            rows[name] = (f"{epoch}:{version}-{release}", arch)
    return rows


VERSIONLOCK_CONF = "/etc/dnf/plugins/versionlock.conf"
VERSIONLOCK_LIST = "/etc/dnf/plugins/versionlock.list"  # dnf 4's default `locklist`


def read_versionlock(errors: list[str]) -> list[str] | None:
    """The dnf versionlock plugin's lock list (dnf 4, RHEL/Rocky 9): its lines, or None where it cannot be
    known (an error says why). No plugin configured or no list file: no package is locked ([])."""
    path = VERSIONLOCK_LIST
    try:
        with open(VERSIONLOCK_CONF, encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.partition("=")
                if sep and key.strip() == "locklist" and value.strip():
                    path = value.strip()
    except FileNotFoundError:
        pass
    except OSError as e:
        errors.append(f"{VERSIONLOCK_CONF}: {e.strerror or e}: holds not read")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
    except FileNotFoundError:
        return []
    except OSError as e:
        errors.append(f"{path}: {e.strerror or e}: holds not read")
        return None


def locked(locks: list[str], name: str, evr: str, arch: str) -> bool:
    """Whether the installed `name` (epoch:version-release, arch) is held by a lock list entry. Entries are
    NEVRA globs as `dnf versionlock add` writes them (`name-epoch:version-release.*`); `!` entries exclude
    versions and hold nothing. Epoch 0 may be written or left out."""
    candidates = [f"{name}-{evr}.{arch}"]
    if evr.startswith("0:"):
        candidates.append(f"{name}-{evr[2:]}.{arch}")
    return any(
        fnmatch.fnmatchcase(c, entry) for entry in locks if not entry.startswith("!") for c in candidates
    )


def read_services(units: list[str], errors: list[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    if not units:
        return out
    if not shutil.which("systemctl"):
        errors.append("systemctl not found: services not read")
        return out
    rc, text, err = _run(["systemctl", "show", "--property=Id,ActiveState,UnitFileState", "--", *units])
    blocks = [b for b in text.split("\n\n") if b.strip()]
    if rc != 0 or len(blocks) != len(units):
        errors.append(f"systemctl show exit {rc} ({len(blocks)} of {len(units)} units): {err.strip()[:200]}")
        return out
    for i, unit in enumerate(units):  # blocks come in the order asked (no zip(strict=) on 3.9)
        block = blocks[i]
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        out[unit] = {"active": props.get("ActiveState", ""), "enabled": props.get("UnitFileState", "")}
    return out


def main(query: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(read(query), sort_keys=True) + "\n")


def read(query: dict[str, Any]) -> dict[str, Any]:
    """The state document of what `query` names (the node checker asks this too, in its Slurm step)."""
    errors: list[str] = []
    files: dict[str, Any] = {}
    for path in query.get("files", []):
        try:
            files[path] = read_file(path)
        except OSError as e:
            errors.append(f"{path}: {e.strerror or e}")
    doc = {
        "files": files,
        "packages": read_packages(list(query.get("packages", [])), errors),
        "services": read_services(list(query.get("services", [])), errors),
        "modules": {m: os.path.isdir("/sys/module/" + m.replace("-", "_")) for m in query.get("modules", [])},
        "errors": errors,
    }
    return doc
