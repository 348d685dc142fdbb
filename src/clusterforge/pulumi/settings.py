"""Stack configuration (`clusterforge:*` keys): read, checked, and turned into clear errors.

Errors are `StackConfigError` (a `pulumi.RunError`: the CLI prints the message without a traceback), each
naming the config key and the command that fixes it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pulumi

from clusterforge.errors import InputError
from clusterforge.plan import Plan, build_plan
from clusterforge.spec import load_spec

NAMESPACE = "clusterforge"
SPEC_KEY = f"{NAMESPACE}:spec"


class StackConfigError(pulumi.RunError):
    """Bad or missing stack configuration; the message says which key and how to fix it."""


@dataclass(frozen=True)
class SwitchPush:
    """Where to push rendered RoCE switch configs (optional, `clusterforge:switchPush`)."""

    nos: str  # sonic | cumulus
    user: str
    addresses: dict[str, str]
    password: pulumi.Output[str] | None = None


@dataclass(frozen=True)
class StackSettings:
    repo_root: Path
    spec_path: Path
    spec_value: str  # as written in the stack config (relative to the repo root)
    cli: str  # clusterforge executable used by the lab commands
    sudo: bool
    bmc_username: str | None = None
    bmc_password: pulumi.Output[str] | None = None
    switch_push: SwitchPush | None = None


def default_cli() -> str:
    """The `clusterforge` next to the interpreter running the program (the venv), else the one on PATH."""
    candidate = Path(sys.executable).parent / "clusterforge"
    return str(candidate) if candidate.exists() else "clusterforge"


def _bool(cfg: pulumi.Config, key: str, default: bool) -> bool:
    try:
        value = cfg.get_bool(key)
    except Exception as exc:  # ConfigTypeError: not true/false
        raise StackConfigError(
            f"config `{NAMESPACE}:{key}` must be true or false ({exc}). Fix: "
            f"pulumi config set {NAMESPACE}:{key} true"
        ) from None
    return default if value is None else value


def _switch_push(cfg: pulumi.Config) -> SwitchPush | None:
    raw = cfg.get_object("switchPush")
    if raw is None:
        return None
    fix = (
        "Fix: pulumi config set --path 'clusterforge:switchPush.nos' sonic (or cumulus), "
        "--path 'clusterforge:switchPush.user' admin, "
        "--path 'clusterforge:switchPush.addresses.<switch>' <ip>"
    )
    if (
        not isinstance(raw, dict)
        or raw.get("nos") not in ("sonic", "cumulus")
        or not isinstance(raw.get("addresses"), dict)
        or not raw.get("user")
    ):
        raise StackConfigError(
            f"config `{NAMESPACE}:switchPush` needs nos (sonic|cumulus), user and "
            f"addresses (switch name -> management address); found {raw!r}. {fix}"
        )
    try:
        password = cfg.require_secret("switchPassword")  # always a secret Output, even if set in plain
    except pulumi.ConfigMissingError:
        raise StackConfigError(
            f"config `{NAMESPACE}:switchPush` is set but `{NAMESPACE}:switchPassword` is not. "
            f"Fix: pulumi config set --secret {NAMESPACE}:switchPassword <password>"
        ) from None
    return SwitchPush(
        nos=str(raw["nos"]),
        user=str(raw["user"]),
        addresses={str(k): str(v) for k, v in raw["addresses"].items()},
        password=password,
    )


def load_settings(repo_root: Path, cfg: pulumi.Config | None = None) -> StackSettings:
    cfg = cfg or pulumi.Config(NAMESPACE)
    spec_value = cfg.get("spec")
    if not spec_value:
        raise StackConfigError(
            f"missing stack config `{SPEC_KEY}` (the cluster spec, relative to the repository root). Fix: "
            f"pulumi config set {SPEC_KEY} inventory/clusters/<name>.yaml"
        )
    spec_path = (repo_root / spec_value).resolve()
    if not spec_path.is_file():
        raise StackConfigError(
            f"config `{SPEC_KEY}` = {spec_value!r}: no such file {spec_path} (paths are relative to the "
            f"repository root {repo_root}). Fix: pulumi config set {SPEC_KEY} inventory/clusters/<name>.yaml"
        )
    return StackSettings(
        repo_root=repo_root,
        spec_path=spec_path,
        spec_value=spec_value,
        cli=cfg.get("cli") or default_cli(),
        sudo=_bool(cfg, "sudo", os.geteuid() != 0),
        bmc_username=cfg.get("bmcUsername"),
        bmc_password=cfg.get_secret("bmcPassword"),
        switch_push=_switch_push(cfg),
    )


def plan_from_settings(settings: StackSettings) -> Plan:
    """Spec -> plan; an invalid spec becomes a StackConfigError that keeps every problem the loader found."""
    try:
        return build_plan(load_spec(settings.spec_path))
    except InputError as exc:
        raise StackConfigError(
            f"config `{SPEC_KEY}` = {settings.spec_value!r} names an invalid cluster spec:\n{exc.render()}\n"
            f"Fix the spec (check it with `clusterforge plan {settings.spec_value}`) or point {SPEC_KEY} "
            "at another one."
        ) from None
