"""The storage role: mount units, LNet files, cufile.json, packages per family and the mdadm.conf line,
rendered from a compiled storage state (plan/desired_storage.py on the 1-SU example), and the role's own
validation refusing values that are not plain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.plan.build import build_plan
from clusterforge.spec import load_spec, load_spec_text
from tests.conftest import CLUSTERS, without_storage

from ._support import PLAYBOOKS
from .test_templates import ROCKY, render

ROLE = PLAYBOOKS / "roles" / "storage"


def _state(text: str | None = None) -> dict[str, Any]:
    spec = load_spec_text(text, "x.yaml") if text else load_spec(CLUSTERS / "h100-ib-1su.yaml")
    return build_plan(spec).nodes[0]["desired"]["storage"]


STATE = _state()
LAB = without_storage((CLUSTERS / "lab.yaml").read_text(encoding="utf-8"))
JFS_STATE = _state(
    LAB
    + """storage:
  shared:
    - name: jfs
      type: juicefs
      metadata: redis://10.244.0.1:6379/1
      mountpoint: /jfs
      network: management
      client_url: http://10.244.0.1:8780/juicefs/juicefs
      client_sha256: "%s"
  scratch: {devices: [/dev/loop7], filesystem: ext4, mountpoint: /scratch}
"""
    % ("b" * 64)
)


CHECK_STATE = _state(
    LAB
    + """storage:
  shared:
    - name: home
      type: nfs
      servers: [10.244.0.1]
      export: /export/home
      mountpoint: /cf-unit-test-home
      network: management
    - name: lus
      type: lustre
      servers: [10.244.0.1]
      export: lus1
      mountpoint: /cf-unit-test-lustre
      network: management
  scratch: {devices: [/dev/loop0], filesystem: xfs, mountpoint: /cf-unit-test-scratch}
  gds: true
"""
)


def unit(**kw: Any) -> dict[str, Any]:
    base = {
        "kind": "home (nfs)",
        "what": "10.20.3.240:/export/home",
        "where": "/home",
        "type": "nfs",
        "options": ["_netdev", "vers=4.2", "nconnect=8"],
        "network": True,
        "after": [],
    }
    base.update(kw)
    return base


def test_nfs_mount_unit() -> None:
    out = render(
        "storage",
        templates={"u": "templates/storage.mount.j2"},
        variables={"storage_state": STATE, "_storage_unit": unit()},
    )["u"]
    assert out == (
        "# Ansible managed\n"
        "# clusterforge storage: home (nfs)\n"
        "[Unit]\n"
        "Description=clusterforge storage home (nfs)\n"
        "DefaultDependencies=no\n"
        "Wants=network-online.target\n"
        "After=network-online.target remote-fs-pre.target\n"
        "Before=remote-fs.target umount.target\n"
        "Conflicts=umount.target\n"
        "\n"
        "[Mount]\n"
        "What=10.20.3.240:/export/home\n"
        "Where=/home\n"
        "Type=nfs\n"
        "Options=_netdev,vers=4.2,nconnect=8\n"
        "\n"
        "[Install]\n"
        "WantedBy=remote-fs.target\n"
    )


def test_scratch_unit_is_local_and_gpfs_waits_for_its_daemon() -> None:
    out = render(
        "storage",
        templates={
            "scratch": "templates/storage.mount.j2",
        },
        variables={
            "storage_state": STATE,
            "_storage_unit": unit(
                kind="scratch",
                what="/dev/md/scratch",
                where="/raid",
                type="xfs",
                options=["noatime"],
                network=False,
            ),
        },
    )["scratch"]
    assert "What=/dev/md/scratch\nWhere=/raid\nType=xfs\nOptions=noatime\n" in out
    assert "network-online" not in out and out.endswith("WantedBy=local-fs.target\n")
    gpfs = render(
        "storage",
        templates={"u": "templates/storage.mount.j2"},
        variables={"storage_state": STATE, "_storage_unit": unit(after=["gpfs.service"])},
    )["u"]
    assert "Conflicts=umount.target\nAfter=gpfs.service\n" in gpfs


def test_percent_in_a_source_is_escaped_for_systemd() -> None:
    out = render(
        "storage",
        templates={"u": "templates/storage.mount.j2"},
        variables={
            "storage_state": STATE,
            "_storage_unit": unit(what="redis://u:p%40ss@10.0.0.1:6379/1", type="juicefs"),
        },
    )["u"]
    assert "What=redis://u:p%%40ss@10.0.0.1:6379/1\n" in out


@pytest.mark.parametrize(
    "bad",
    [
        {"what": "10.0.0.1:/x\nExecStartPre=/bin/sh"},
        {"where": "/home\n[Service]"},
        {"options": ["_netdev", "x\nWhat=/dev/sda"]},
        {"options": ["a b"]},
        {"type": "nfs\nOptions=exec"},
    ],
)
def test_mount_unit_refuses_values_that_are_not_plain(bad: dict[str, Any]) -> None:
    from .test_values_are_data import render_fails

    assert "is not a valid" in render_fails(
        "storage", "templates/storage.mount.j2", {"storage_state": STATE, "_storage_unit": unit(**bad)}
    )


def test_lnet_files() -> None:
    out = render(
        "storage",
        templates={"modprobe": "templates/lustre.conf.j2", "lnet": "templates/lnet.conf.j2"},
        variables={"storage_state": STATE},
    )
    assert out["modprobe"].splitlines()[-1] == 'options lnet networks="o2ib0(stor0,stor1)"'
    doc = yaml.safe_load(out["lnet"])
    assert doc == {"net": [{"net type": "o2ib0", "local NI(s)": [{"interfaces": {0: "stor0", 1: "stor1"}}]}]}


def test_cufile_json_is_json_with_the_gdscheck_property_names() -> None:
    doc = json.loads(
        render("storage", templates={"c": "templates/cufile.json.j2"}, variables={"storage_state": STATE})[
            "c"
        ]
    )
    assert doc["properties"]["use_compat_mode"] is True and doc["fs"]["lustre"]["posix_gds_min_kb"] == 0


def test_packages_per_family() -> None:
    expr = {
        "p": "{{ _storage_packages }}",
        "mdadm": "{{ _storage_mdadm_line }}",
        "conf": "{{ _storage_mdadm_conf }}",
    }
    deb = render("storage", expressions=expr, variables={"storage_state": STATE})
    assert deb["p"] == [
        "lustre-client-utils",
        "lustre-client-modules-dkms",
        "nfs-common",
        "xfsprogs",
        "mdadm",
        "nvidia-gds",
        "fio",
    ]
    assert deb["mdadm"] == "ARRAY /dev/md/scratch metadata=1.2 name=roce-01:scratch"
    assert deb["conf"] == "/etc/mdadm/mdadm.conf"
    el = render("storage", family="RedHat", facts=ROCKY, expressions=expr, variables={"storage_state": STATE})
    assert el["p"] == [
        "lustre-client",
        "kmod-lustre-client",
        "nfs-utils",
        "xfsprogs",
        "mdadm",
        "nvidia-gds",
        "fio",
    ]
    assert el["conf"] == "/etc/mdadm.conf"
    jfs = render(
        "storage",
        expressions={"p": "{{ _storage_packages }}", "j": "{{ _storage_juicefs }}"},
        variables={"storage_state": JFS_STATE},
    )
    assert jfs["p"] == ["fuse3", "e2fsprogs", "fio"]
    assert jfs["j"]["binary"] == "/usr/local/bin/juicefs" and jfs["j"]["sha256"] == "b" * 64


def test_no_storage_section_means_nothing_to_do() -> None:
    out = render(
        "storage",
        expressions={"s": "{{ storage_state is none }}", "m": "{{ _storage_mounts }}"},
        variables={"storage_state": None},
    )
    assert out == {"s": True, "m": []}


def _validate_conditions() -> list[str]:
    tasks = yaml.safe_load((ROLE / "tasks" / "validate.yml").read_text())
    return [c for t in tasks for c in t["ansible.builtin.assert"]["that"]]


def _validate(state: dict[str, Any]) -> list[bool]:
    conds = _validate_conditions()
    out = render(
        "storage",
        expressions={str(i): "{{ (" + c + ") | bool }}" for i, c in enumerate(conds)},
        variables={"storage_state": state},
    )
    return [out[str(i)] for i in range(len(conds))]


def test_validation_accepts_the_compiled_states() -> None:
    assert all(_validate(STATE)) and all(_validate(JFS_STATE)) and all(_validate(CHECK_STATE))


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s["mounts"][0].update(target="/lustre\n/etc"),
        lambda s: s["mounts"][0].update(source="x;reboot"),
        lambda s: s["mounts"][0]["options"].append("ro\nx"),
        lambda s: s["mounts"][0].update(type="cephfs"),
        lambda s: s["mounts"][0].update(unit="x.service"),
        lambda s: s["mounts"][0].update(unit="a b.mount"),
        lambda s: s["scratch"].update(devices=["/dev/nvme1n1 /dev/sda"]),
        lambda s: s["scratch"].update(raid="raid5"),
        lambda s: s["scratch"].update(devices=["/dev/nvme1n1"]),
    ],
)
def test_validation_refuses_a_hand_edited_state(change: Any) -> None:
    state = json.loads(json.dumps(STATE))
    change(state)
    assert not all(_validate(state))


def test_every_task_file_is_imported_and_tagged() -> None:
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    imported = {
        t["ansible.builtin.import_tasks"]["file"] for t in main if "ansible.builtin.import_tasks" in t
    }
    assert imported == {p.name for p in (ROLE / "tasks").glob("*.yml")} - {"main.yml"}
    assert all("storage" in t["tags"] for t in main if "ansible.builtin.import_tasks" in t)


def test_scratch_never_formats_a_device_that_holds_something() -> None:
    """The mkfs task runs only on an empty blkid answer; any other answer but the declared type fails."""
    tasks = {
        t["name"]: t for t in yaml.safe_load((ROLE / "tasks" / "scratch.yml").read_text()) if "name" in t
    }
    mkfs = tasks["Make the scratch filesystem on the empty device"]
    assert "(_storage_scratch_sig.stdout | trim) == ''" in mkfs["when"]
    guard = tasks["A scratch device that holds another filesystem is never reformatted"]
    assert "(_storage_scratch_sig.stdout | trim) not in ['', _storage_scratch.filesystem]" in guard["when"]
    probe = tasks["Filesystem on the scratch device (blkid low-level probe)"]
    assert probe["ansible.builtin.command"]["argv"][:2] == ["blkid", "-p"] and probe["check_mode"] is False


def test_role_file_paths_exist() -> None:
    for rel in ("defaults/main.yml", "vars/Debian.yml", "vars/RedHat.yml", "handlers/main.yml"):
        assert (ROLE / rel).is_file()
    assert Path(ROLE / "templates" / "storage.mount.j2").is_file()


def test_an_inventory_compiled_before_storage_means_none() -> None:
    """The sample inventory's desired state predates the storage key: the role reads it as no storage."""
    out = render("storage", expressions={"s": "{{ storage_state is none }}", "p": "{{ _storage_packages }}"})
    assert out["s"] is True


# ---- the role run in check mode on this machine (nothing is written; blkid is a stand-in) ----------------


def _check_run(run_ansible: Any, tmp_path: Path, blkid_type: str) -> Any:
    from ._support import task_results

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "blkid.log"
    (bin_dir / "blkid").write_text(
        f'#!/bin/sh\necho "$*" >> {log}\n[ -n "{blkid_type}" ] || exit 2\necho {blkid_type}\n'
    )
    (bin_dir / "blkid").chmod(0o755)
    playbook = tmp_path / "storage.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "roles": ["storage"]}]))
    knobs = tmp_path / "knobs.yml"
    knobs.write_text(
        yaml.safe_dump(
            {
                "ansible_os_family": "Debian",
                "storage_state": CHECK_STATE,
                "storage_install": False,
                "storage_set_nic_mtu": False,
                "ansible_become": False,
            }
        )
    )
    import os

    res = run_ansible(
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        "--check",
        "-e",
        f"@{knobs}",
        str(playbook),
        env={"ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles"), "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        json_output=True,
    )
    results = [(n, r) for n, _, r in task_results(res.json())]
    return res, results, log.read_text() if log.exists() else ""


WRITTEN = [
    "/etc/systemd/system/cf\\x2dunit\\x2dtest\\x2dhome.mount",
    "/etc/systemd/system/cf\\x2dunit\\x2dtest\\x2dscratch.mount",
    "/etc/modprobe.d/lustre.conf",
    "/etc/cufile.json",
]


@pytest.mark.skipif(
    not Path("/dev/loop0").is_block_device(), reason="needs a block device node at /dev/loop0"
)
def test_check_mode_plans_the_empty_device_and_writes_nothing(run_ansible: Any, tmp_path: Path) -> None:
    before = {p: Path(p).exists() for p in WRITTEN}
    res, results, calls = _check_run(run_ansible, tmp_path, "")
    assert res.rc == 0, res.output[-3000:]
    changed = [n for n, r in results if r.get("changed")]
    assert "storage : Scratch mount unit" in changed and "storage : Shared filesystem mount units" in changed
    assert "storage : LNet module options (networks)" in changed
    mkfs = [r for n, r in results if n == "storage : Make the scratch filesystem on the empty device"]
    assert mkfs and not mkfs[0].get("failed")  # planned (check mode skips the command itself)
    assert calls.splitlines() == ["-p -o value -s TYPE /dev/loop0"]
    assert {p: Path(p).exists() for p in WRITTEN} == before  # check mode wrote nothing


@pytest.mark.skipif(
    not Path("/dev/loop0").is_block_device(), reason="needs a block device node at /dev/loop0"
)
def test_a_device_holding_another_filesystem_stops_the_role(run_ansible: Any, tmp_path: Path) -> None:
    res, results, _ = _check_run(run_ansible, tmp_path, "ext4")
    assert res.rc != 0
    failed = [(n, r) for n, r in results if r.get("failed")]
    assert [n for n, _ in failed] == [
        "storage : A scratch device that holds another filesystem is never reformatted"
    ]
    assert "/dev/loop0 holds 'ext4', the spec declares xfs: not reformatted" in failed[0][1]["msg"]
    assert not any(
        n == "storage : Make the scratch filesystem on the empty device" and not r.get("skipped")
        for n, r in results
    )


def _stat_tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for t in tasks:
        out += _stat_tasks(t.get("block", []))
        if "ansible.builtin.stat" in t:
            out.append(t)
    return out


def test_device_probes_follow_stable_names() -> None:
    """Scratch devices are declared by stable name (/dev/disk/by-id/..., /dev/md/<name>): udev's and mdadm's
    links to the kernel's device. A stat that does not follow them sees a link, never a block device (what
    the lab's by-id scratch disk showed)."""
    tasks = yaml.safe_load((ROLE / "tasks" / "scratch.yml").read_text())
    stats = _stat_tasks(tasks)
    assert len(stats) == 3
    for t in stats:
        assert t["ansible.builtin.stat"].get("follow") is True, t["name"]
