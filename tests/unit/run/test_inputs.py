"""The digest of site.yml's inputs besides the plan: the roles and the inventory Ansible reads."""

from __future__ import annotations

from pathlib import Path

from clusterforge.run.inputs import inputs_digest


def _tree(root: Path) -> tuple[Path, Path]:
    books, inv = root / "playbooks", root / "inv"
    (books / "roles" / "r" / "tasks").mkdir(parents=True)
    (books / "site.yml").write_text("- hosts: all\n")
    (books / "roles" / "r" / "tasks" / "main.yml").write_text("- ansible.builtin.debug: {}\n")
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text("all: {}\n")
    (inv / "group_vars" / "all.yml").write_text("x: 1\n")
    return books, inv


def test_same_files_same_digest_and_what_ansible_does_not_read_does_not_count(tmp_path: Path) -> None:
    books, inv = _tree(tmp_path)
    first = inputs_digest(inv, books)
    (inv / "plan.json").write_text("{}")  # not read by Ansible
    (inv / "topology.svg").write_text("<svg/>")
    (books / "roles" / "r" / "tasks" / "__pycache__").mkdir()
    (books / "roles" / "r" / "tasks" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert inputs_digest(inv, books) == first and len(first) == 64


def test_a_changed_role_or_inventory_file_changes_the_digest(tmp_path: Path) -> None:
    books, inv = _tree(tmp_path)
    first = inputs_digest(inv, books)
    (books / "roles" / "r" / "tasks" / "main.yml").write_text("- ansible.builtin.debug: {msg: x}\n")
    second = inputs_digest(inv, books)
    (inv / "group_vars" / "all.yml").write_text("x: 2\n")
    third = inputs_digest(inv, books)
    (inv / "files").mkdir()
    (inv / "files" / "checker.pyz").write_bytes(b"PK")
    fourth = inputs_digest(inv, books)
    # a file moved to another name is another input, even with the same bytes
    (inv / "group_vars" / "all.yml").rename(inv / "group_vars" / "other.yml")
    fifth = inputs_digest(inv, books)
    assert len({first, second, third, fourth, fifth}) == 5
