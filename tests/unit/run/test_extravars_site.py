"""--extra-vars parsing, and the site layer reaching Ansible runs (beside the generated inventory)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from clusterforge.errors import InputError
from clusterforge.run import extravars
from clusterforge.run.ansible import run_playbook


def test_extra_vars_forms(tmp_path: Path) -> None:
    f = tmp_path / "ev.yml"
    f.write_text("nccl_debug: WARN\nrdma_roce_mtu: 9000\n")
    got = extravars.parse(["a=1 b=two", '{"c": [1, 2]}', f"@{f}", "nccl_debug=INFO"])
    assert got == {"a": "1", "b": "two", "c": [1, 2], "rdma_roce_mtu": 9000, "nccl_debug": "INFO"}


@pytest.mark.parametrize("bad", ["=x", "no-equals", "1a=2", "@/nonexistent.yml", "{not: [valid", "[1, 2]"])
def test_bad_extra_vars_are_input_errors(bad: str) -> None:
    with pytest.raises(InputError):
        extravars.parse([bad])


def test_site_layer_and_extra_vars_reach_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = tmp_path / "inventory" / "generated" / "c1"
    (gen / "group_vars").mkdir(parents=True)
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (gen / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"n1": host}}}))
    (gen / "group_vars" / "all.yml").write_text("clusterforge_pending_file: /generated/value\n")
    site = tmp_path / "inventory" / "site" / "c1" / "group_vars"
    site.mkdir(parents=True)
    (site / "all.yml").write_text(f"clusterforge_pending_file: {tmp_path / 'from-site'}\n")
    (tmp_path / "from-site").write_text("reboot: kernel\n")
    monkeypatch.delenv("CLUSTERFORGE_SITE", raising=False)
    res = run_playbook("pending.yml", gen, limit="n1")
    record = "Read the pending-reboot record"
    assert res.rc == 0 and [t.stdout for t in res.tasks if t.task == record] == ["reboot: kernel"]
    (tmp_path / "from-e").write_text("reboot: driver\n")
    res = run_playbook("pending.yml", gen, extravars={"clusterforge_pending_file": str(tmp_path / "from-e")})
    assert [t.stdout for t in res.tasks if t.task == record] == ["reboot: driver"]
