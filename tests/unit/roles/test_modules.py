"""The clusterforge.node modules on localhost, against plain files and test doubles of the NIC tools.

Each module must report changed exactly when a value differs, write nothing in check mode, show the
setting's before/after in the diff, and fail (not hang) when a command outlives its timeout.
The assertions live in playbooks/modules.yml; this test prepares the files and runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._support import FIXTURES, HERE, Runner

MLXCONFIG_STATE = {
    "PCI_WR_ORDERING": {
        "default": "per_mkey",
        "current": "force_relax",
        "next": "force_relax",
        "values": {"per_mkey": 0, "force_relax": 1},
    },
    "ATS_ENABLED": {
        "default": "False",
        "current": "False",
        "next": "False",
        "values": {"False": 0, "True": 1},
    },
}


def _prepare(work: Path) -> None:
    for cpu in (0, 1):
        for state in range(4):
            d = work / "sys" / f"cpu{cpu}" / "cpuidle" / f"state{state}"
            d.mkdir(parents=True)
            (d / "disable").write_text("0\n")
    (work / "sys" / "thp").write_text("always [madvise] never\n")
    (work / "sys" / "tcp_rmem").write_text("4096\t131072\t6291456\n")
    (work / "sys" / "cnp_dscp").write_text("0\n")
    (work / "cfg").mkdir()
    qos = work / "state" / "qos" / "eth9"
    qos.mkdir(parents=True)
    (qos / "trust").write_text("dscp\n")
    (qos / "pfc").write_text("0,0,0,0,0,0,0,0\n")
    other = work / "state" / "qos" / "eth8"
    other.mkdir(parents=True)
    (other / "trust").write_text("pcp\n")
    (other / "pfc").write_text("0,0,0,0,0,0,0,0\n")
    mlx = work / "state" / "mlxconfig"
    mlx.mkdir(parents=True)
    (mlx / "0000_18_00.0.json").write_text(json.dumps(MLXCONFIG_STATE))
    (work / "grub.cfg").write_text(
        "menuentry x {\n  linux /vmlinuz root=/dev/sda1 ro hugepagesz=1G hugepages=4\n}\n"
    )
    (work / "grub.cfg.new").write_text(
        "menuentry x {\n  linux /vmlinuz root=/dev/sda1 ro processor.max_cstate=1 iommu=pt\n}\n"
    )


def test_modules(run_ansible: Runner, tmp_path: Path) -> None:
    _prepare(tmp_path)
    res = run_ansible(
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        str(HERE / "playbooks" / "modules.yml"),
        env={"CF_TEST_DIR": str(tmp_path), "CF_FAKE_BIN": str(FIXTURES / "fake_bin")},
    )
    assert res.rc == 0, res.output[-6000:]
    assert "failed=0" in res.stdout
    # check mode wrote nothing, apply wrote the values
    assert (tmp_path / "sys" / "thp").read_text() == "never"
    assert json.loads((tmp_path / "facts.d" / "clusterforge_pending.fact").read_text()) == {
        "reboot_required": False,
        "reasons": {},
    }
    assert not (tmp_path / "lib" / "reboot-required").exists()
