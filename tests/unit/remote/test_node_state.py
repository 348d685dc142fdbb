"""`remote.node_state`: the probe program run here by `python3 -`, exactly as a node runs it, on files of
this machine; names reach it as data (a path full of shell and Python syntax is only a path)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterforge.remote.node_state import parse, program


def run(names: dict[str, list[str]]) -> dict[str, Any]:
    p = subprocess.run(
        [sys.executable, "-"], input=program(names), capture_output=True, text=True, timeout=60, check=True
    )
    return parse(p.stdout)


def test_files_digest_mode_owner_and_absent(tmp_path: Path) -> None:
    f = tmp_path / "90-x.conf"
    f.write_bytes(b"vm.swappiness = 10\n")
    f.chmod(0o640)
    odd = tmp_path / "a'b\"; $(touch pwned) `x` \\n.conf"
    odd.write_text("y")
    doc = run({"files": [str(f), str(tmp_path / "absent"), str(odd)]})
    got = doc["files"][str(f)]
    assert got["sha256"] == hashlib.sha256(b"vm.swappiness = 10\n").hexdigest()
    assert got["mode"] == "0640" and got["owner"] and got["group"]
    assert doc["files"][str(tmp_path / "absent")] is None
    assert doc["files"][str(odd)]["sha256"] == hashlib.sha256(b"y").hexdigest()
    assert not (Path.cwd() / "pwned").exists() and doc["errors"] == []


def test_unreadable_file_is_an_error_not_absent(tmp_path: Path) -> None:
    d = tmp_path / "dir"
    d.mkdir()
    doc = run({"files": [str(d)]})  # a directory cannot be read as a file
    assert str(d) not in doc["files"] and doc["errors"] and str(d) in doc["errors"][0]


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="no dpkg on this machine")
def test_packages_installed_and_not() -> None:
    doc = run({"packages": ["dpkg", "clusterforge-no-such-package"]})
    assert doc["packages"]["dpkg"]["version"] and doc["packages"]["dpkg"]["hold"] in (True, False)
    assert doc["packages"]["clusterforge-no-such-package"] is None


@pytest.mark.skipif(not shutil.which("systemctl"), reason="no systemctl on this machine")
def test_services_in_the_order_asked() -> None:
    doc = run({"services": ["clusterforge-no-such.service", "dbus.service"]})
    if doc["errors"]:  # no systemd as init here (a container): the read says so, never guesses
        assert "systemctl" in doc["errors"][0] and doc["services"] == {}
        return
    assert doc["services"]["clusterforge-no-such.service"]["active"] == "inactive"
    assert set(doc["services"]) == {"clusterforge-no-such.service", "dbus.service"}


def test_modules() -> None:
    doc = run({"modules": ["clusterforge_no_such_module"]})
    assert doc["modules"] == {"clusterforge_no_such_module": False}
    if os.path.isdir("/sys/module"):
        loaded = sorted(os.listdir("/sys/module"))[0]
        assert run({"modules": [loaded]})["modules"][loaded] is True


def test_parse_refuses_what_is_not_a_state() -> None:
    for text in ("", "hello\n", json.dumps({"files": []}), json.dumps({"files": {}, "packages": {}})):
        with pytest.raises(ValueError):
            parse(text)
