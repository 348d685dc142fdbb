"""The execution strategy run_playbook hands to Ansible: Mitogen by default, stock linear on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.errors import ExitCode, InputError
from clusterforge.run import ansible
from clusterforge.run.naive import naive_env, stock_env, stock_runner
from tests.conftest import REPO


def test_default_is_mitogen_linear_from_the_installed_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ansible.STRATEGY_ENV, raising=False)
    env = ansible.runner_env(8)
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    folder = ansible.mitogen_strategy_dir()
    assert folder is not None and env["ANSIBLE_STRATEGY_PLUGINS"] == str(folder)
    assert (folder / "mitogen_linear.py").is_file()


def test_linear_on_request_leaves_stock_ansible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ansible.STRATEGY_ENV, "Linear")
    env = ansible.runner_env(8)
    assert env["ANSIBLE_STRATEGY"] == "linear" and "ANSIBLE_STRATEGY_PLUGINS" not in env
    # the SSH tuning stays: this is the stock tuned configuration
    assert env["ANSIBLE_PIPELINING"] == "True" and "ControlPersist" in env["ANSIBLE_SSH_ARGS"]


def test_mitogen_missing_falls_back_to_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ansible.STRATEGY_ENV, raising=False)
    monkeypatch.setattr(ansible, "mitogen_strategy_dir", lambda: None)
    assert ansible.strategy_env() == {"ANSIBLE_STRATEGY": "linear"}


def test_unknown_strategy_is_bad_input_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ansible.STRATEGY_ENV, "free")
    with pytest.raises(InputError) as err:
        ansible.runner_env()
    assert err.value.exit_code == ExitCode.BAD_INPUT
    assert ansible.STRATEGY_ENV in str(err.value) and "'free'" in str(err.value)


def test_bench_variants_differ_only_in_what_they_measure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ansible.STRATEGY_ENV, raising=False)
    tuned, stock, naive = ansible.runner_env(16), stock_env(16), naive_env(16)
    assert stock["ANSIBLE_STRATEGY"] == "linear" and "ANSIBLE_STRATEGY_PLUGINS" not in stock
    assert {k: v for k, v in tuned.items() if not k.startswith("ANSIBLE_STRATEGY")} == {
        k: v for k, v in stock.items() if k != "ANSIBLE_STRATEGY"
    }
    assert naive["ANSIBLE_STRATEGY"] == "linear" and "ANSIBLE_STRATEGY_PLUGINS" not in naive
    before = ansible.runner_env
    with stock_runner():
        assert ansible.runner_env(4)["ANSIBLE_STRATEGY"] == "linear"
    assert ansible.runner_env is before


@pytest.mark.parametrize("command", ["provision", "drift"])
def test_a_bad_strategy_stops_the_cli_before_anything_runs(
    command: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from clusterforge import cli, targets
    from clusterforge.flows import drift, provision

    touched: list[str] = []
    monkeypatch.setattr(targets, "for_plan", lambda *a, **k: touched.append("target"))
    for flow in (provision, drift):
        monkeypatch.setattr(flow, "load_plan", lambda *a, **k: touched.append("plan"))
    monkeypatch.setenv(ansible.STRATEGY_ENV, "free")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["clusterforge", command, str(REPO / "inventory/clusters/lab.yaml")])
    with pytest.raises(SystemExit) as end:
        cli.main()
    assert end.value.code == ExitCode.BAD_INPUT
    assert ansible.STRATEGY_ENV in capsys.readouterr().err
    assert touched == [] and not (tmp_path / "inventory").exists()  # no plan written, no lab started


def test_users_ansible_settings_are_kept_where_they_cannot_break_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "site-ansible.cfg"))
    monkeypatch.setenv("ANSIBLE_SSH_ARGS", "-o ProxyJump=bastion")
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", "/opt/site/collections")
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", "False")
    env = ansible.runner_env(8)
    assert env["ANSIBLE_CONFIG"] == str(tmp_path / "site-ansible.cfg")
    assert env["ANSIBLE_SSH_ARGS"] == "-o ProxyJump=bastion"
    assert env["ANSIBLE_COLLECTIONS_PATH"].endswith(":/opt/site/collections")
    assert env["ANSIBLE_COLLECTIONS_PATH"].startswith(str(ansible.assets.playbooks()))
    assert env["ANSIBLE_HOST_KEY_CHECKING"] == "True"  # never the user's choice to turn off
