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

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


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


def _fake_rpm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lock_list: Path) -> None:
    """A RHEL node's view: `rpm` (no dpkg-query) on PATH and dnf's versionlock plugin configured."""
    from clusterforge.remote import node_state_probe as probe

    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    rpm = bin_ / "rpm"
    rpm.write_text(
        "#!/bin/sh\n"
        # rpm -q --qf FMT -- NAMES: a row per installed name, rpm's line for an absent one; rc = absent count
        'rc=0; seen=0\nfor a; do\n  if [ "$a" = -- ]; then seen=1; continue; fi\n'
        "  [ $seen = 1 ] || continue\n"
        "  case $a in\n"
        "    nvidia-driver) echo 'nvidia-driver 3 570.133.20 1.el9 x86_64' ;;\n"
        "    datacenter-gpu-manager) echo 'datacenter-gpu-manager 1 4.2.3 1 x86_64' ;;\n"
        "    perftest) echo 'perftest 0 4.5 12.el9 x86_64' ;;\n"
        '    *) echo "package $a is not installed"; rc=$((rc + 1)) ;;\n  esac\ndone\nexit $rc\n'
    )
    rpm.chmod(0o755)
    conf = tmp_path / "versionlock.conf"
    conf.write_text(f"[main]\nenabled = 1\nlocklist = {lock_list}\n")
    monkeypatch.setenv("PATH", str(bin_))
    monkeypatch.setattr(probe, "VERSIONLOCK_CONF", str(conf))


def test_rpm_holds_are_dnf_versionlock_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries as `dnf versionlock add` and community.general.dnf_versionlock write them
    (`name-epoch:version-release.*`, `!` for an excluded version; the module's `locklist_entry`)."""
    from clusterforge.remote import node_state_probe as probe

    locks = tmp_path / "versionlock.list"
    locks.write_text(
        "# Added lock on Fri Nov 27 09:40:00 2026\n"
        "nvidia-driver-3:570.133.20-1.el9.*\n"
        "!datacenter-gpu-manager-1:4.2.3-1.*\n"
        "perftest-4.5-12.el9.*\n"
    )
    _fake_rpm(tmp_path, monkeypatch, locks)
    errors: list[str] = []
    got = probe.read_packages(["nvidia-driver", "datacenter-gpu-manager", "perftest", "absent"], errors)
    assert got == {
        "nvidia-driver": {"version": "3:570.133.20-1.el9", "hold": True},
        "datacenter-gpu-manager": {"version": "1:4.2.3-1", "hold": False},  # excluded, not held
        "perftest": {"version": "0:4.5-12.el9", "hold": True},  # epoch 0 left out of the entry
        "absent": None,
    }
    assert errors == []
    locks.write_text("nvidia-driver-3:570.124.06-1.el9.*\n")  # another version locked: this one is not
    assert probe.read_packages(["nvidia-driver"], errors)["nvidia-driver"]["hold"] is False


def test_rpm_rows_read_a_real_listing() -> None:
    """The probe's RPM query format is vuls' %{EPOCHNUM} one: its real capture (Oracle Linux 8.7) reads."""
    from clusterforge.remote import node_state_probe as probe

    text = (REAL / "rpm-qa-qf-name-epochnum-version-release-arch__ol8.7-vuls1381__excerpt2.txt").read_text()
    rows = probe.rpm_rows(text + "package kernel-source-nvidia390 is not installed\n")
    assert len(rows) == 8 and rows["libgcc"] == ("0:8.5.0-16.0.2.el8_7", "x86_64")
    assert rows["tzdata"] == ("0:2023c-1.el8", "noarch") and "kernel-source-nvidia390" not in rows
    assert probe.RPM_QF == "%{NAME} %{EPOCHNUM} %{VERSION} %{RELEASE} %{ARCH}\n"


def test_rpm_holds_unknown_when_the_lock_list_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.remote import node_state_probe as probe

    unreadable = tmp_path / "locks.d"
    unreadable.mkdir()  # a directory: open() fails, so holds are unknown (None), never "not held"
    _fake_rpm(tmp_path, monkeypatch, unreadable)
    errors: list[str] = []
    got = probe.read_packages(["nvidia-driver"], errors)
    assert got["nvidia-driver"] == {"version": "3:570.133.20-1.el9", "hold": None}
    assert errors and "holds not read" in errors[0]
    _fake_rpm(tmp_path, monkeypatch, tmp_path / "no-such.list")  # plugin without a list: nothing locked
    assert probe.read_packages(["nvidia-driver"], [])["nvidia-driver"]["hold"] is False


def test_dpkg_holds_and_unknown_rows_from_a_real_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Debian-family node's view: `dpkg-query` printing what the lent H100 machine's printed for these
    names (held `hi`, installed `ii`, a never-installed `un` row with no version; the absent name on
    stderr, exit 1): held packages read as held, `un` and the absent name as not installed, no error."""
    from clusterforge.remote import node_state_probe as probe

    capture = (
        REAL / "dpkg-query-W-f-package-version-status__ubuntu24.04-cuda13-image-hold-un-named-device__2.txt"
    )
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake = bin_ / "dpkg-query"
    fake.write_text(
        f"#!/bin/sh\n/bin/cat '{capture}'\n"
        "echo 'dpkg-query: no packages found matching nvidia-driver-570-open' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_))
    names = ["libcudnn9-cuda-13", "cuda-compat-13-0", "cuda-cub-13-0", "nvidia-driver-570-open", "libnccl2"]
    errors: list[str] = []
    assert probe.read_packages(names, errors) == {
        "libcudnn9-cuda-13": {"version": "9.14.0.64-1", "hold": True},
        "cuda-compat-13-0": {"version": "580.95.05-0ubuntu1", "hold": False},
        "cuda-cub-13-0": None,
        "nvidia-driver-570-open": None,
        "libnccl2": {"version": "2.28.3-1+cuda13.0", "hold": True},
    }
    assert errors == []
