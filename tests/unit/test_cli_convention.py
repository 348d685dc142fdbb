"""One option convention across commands (cli/options.py): SPEC positional, `--format` from the formats
each command declares, `--output FILE`; old spellings hidden and warned about. Every command of the CLI is in
one of the two tables below, so a new command has to be classified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from clusterforge.cli import app
from clusterforge.cli.options import split_spec

REPO = Path(__file__).resolve().parents[2]
LAB = str(REPO / "inventory/clusters/lab.yaml")

# command → (arguments that get past the positionals, the formats it declares)
FORMATTED: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "plan": ([LAB], ("text", "json")),
    "drift": ([LAB], ("text", "json", "markdown", "junit")),
    "certify": ([LAB], ("text", "json", "junit")),
    "burnin": ([LAB], ("text", "json")),
    "fabric check": ([LAB, "--discovery", "."], ("text", "json", "markdown", "junit")),
    "fabric export": ([LAB], ("ibdiagnet-topo", "dot")),
    "fabric switch-readback": ([LAB, "--switch", "x", "--outputs", "."], ("text", "json")),
    "fabric sm-readback": ([LAB, "--outputs", "."], ("text", "json")),
    "pool status": ([LAB], ("text", "json")),
    "certificate verify": (["c.json"], ("text", "json")),
    "records merge": (["s.db"], ("text", "json")),
    "records runs": ([], ("text", "json")),
    "records show": (["RUN"], ("text", "json")),
    "lab status": ([LAB], ("text", "json")),
    "report burnin": (["run"], ("html", "json")),
}
# commands with no report to format: they act (provision, admit, drain, lab) or print one kind of thing
UNFORMATTED = {
    "provision",
    "exporter",
    "pool admit",
    "pool drain",
    "certificate list",
    "certificate public-key",
    "certificate rotate-key",
    "certificate trust-key",
    "certificate keys",
    "inventory from-stack",
    "checks list",
    "checks docs",
    "fabric sm-config",
    "collections install",
    "lab up",
    "lab down",
    "lab purge",
    "lab ssh",
    "lab exec",
    "lab reset",
    "lab snapshot",
    "lab restore",
    "lab fault",
    "lab infra up",
    "lab infra down",
    "lab node up",
    "lab node down",
}
OLD_SPELLINGS = ("--json", "--junit", "--html", "--plan", "--spec")


def _commands(cmd: Any, prefix: str = "") -> dict[str, Any]:
    """Every runnable command by path ('pool status'); a group that runs itself (certify, burnin) counts."""
    subs = getattr(cmd, "commands", None)
    if subs is None:
        return {prefix: cmd}
    own = {prefix: cmd} if prefix and cmd.invoke_without_command else {}
    for name, sub in subs.items():
        own.update(_commands(sub, f"{prefix} {name}".strip()))
    return own


COMMANDS = _commands(typer.main.get_command(app))


def _options(path: str) -> tuple[set[str], set[str]]:
    """(visible option names, hidden option names) of the command at `path`."""
    shown: set[str] = set()
    hidden: set[str] = set()
    for p in COMMANDS[path].params:
        if p.param_type_name == "option":
            (hidden if p.hidden else shown).update(p.opts)
    return shown, hidden


def test_every_command_is_classified() -> None:
    assert set(COMMANDS) == set(FORMATTED) | UNFORMATTED


def _help(path: str) -> str:
    res = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("path", sorted(FORMATTED))
def test_help_lists_format_and_output(path: str) -> None:
    text = _help(path)
    assert "--format" in text and "--output" in text
    for fmt in FORMATTED[path][1]:
        assert fmt in text
    shown, _ = _options(path)
    assert {"--format", "--output"} <= shown
    assert not shown & set(OLD_SPELLINGS) - {"--html"}  # kept for one release, hidden
    assert "--html" not in shown or path == "burnin"  # burn-in: an extra HTML file besides the report


@pytest.mark.parametrize("path", sorted(UNFORMATTED))
def test_commands_without_a_report_take_no_format(path: str) -> None:
    shown, hidden = _options(path)
    assert "--format" not in shown | hidden and not shown & set(OLD_SPELLINGS)


def test_old_spellings_are_still_accepted() -> None:
    assert {"--junit", "--json"} <= _options("certify")[1]
    assert {"--plan", "--spec", "--json"} <= _options("pool status")[1]
    assert {"--plan", "--spec"} <= _options("pool admit")[1] and "--plan" in _options("lab node up")[1]
    assert {"--html", "--json"} <= _options("report burnin")[1]
    for path in ("plan", "certificate verify", "records merge", "lab status"):
        assert "--json" in _options(path)[1]


@pytest.mark.parametrize("path", sorted(FORMATTED))
def test_a_format_the_command_does_not_declare_is_exit_2(path: str, tmp_path: Path) -> None:
    args, formats = FORMATTED[path]
    bad = "junit" if "junit" not in formats else "yaml"
    res = CliRunner().invoke(app, [*path.split(), *args, "--format", bad], env={"COLUMNS": "200"})
    assert res.exit_code == 2, res.output
    assert f"'{bad}' is not one of {', '.join(formats)}" in res.output


def test_plan_json_to_a_file_and_to_stdout(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    res = CliRunner().invoke(
        app, ["plan", LAB, "--out", str(tmp_path), "--no-svg", "--format", "json", "--output", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["cluster"] == "lab" and res.stdout == ""
    res = CliRunner().invoke(app, ["plan", LAB, "--out", str(tmp_path), "--no-svg", "-f", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["cluster"] == "lab"
    text = tmp_path / "summary.txt"
    res = CliRunner().invoke(app, ["plan", LAB, "--out", str(tmp_path), "--no-svg", "--output", str(text)])
    assert res.exit_code == 0 and "lab" in text.read_text() and res.stdout == ""


def test_old_json_flag_still_works_with_a_deprecation(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["plan", LAB, "--out", str(tmp_path), "--no-svg", "--json"])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["cluster"] == "lab"
    assert (
        res.stderr.count("\n") == 1 and "--json is deprecated" in res.stderr and "--format json" in res.stderr
    )


def test_spec_or_names() -> None:
    assert split_spec(["c.yaml", "n1", "n2"], None) == (Path("c.yaml"), ["n1", "n2"])
    assert split_spec(["plan.JSON"], None) == (Path("plan.JSON"), [])
    assert split_spec(["n1", "n2"], Path("env.yaml")) == (Path("env.yaml"), ["n1", "n2"])
    assert split_spec([], None) == (None, [])
