"""Drift flow for the CLI: plan → drift report → render → (optional) fix → exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.drift import formats
from clusterforge.drift.model import DriftReport
from clusterforge.drift.run import drift_recorded
from clusterforge.errors import ExitCode
from clusterforge.run.pipeline import load_plan
from clusterforge.term import safe, terminal_text


def render(report: DriftReport, fmt: str, allow_unreachable: bool) -> str:
    if fmt == "json":
        return formats.as_json(report)
    if fmt == "junit":
        return formats.junit(report)
    if fmt == "markdown":
        return formats.markdown(report, allow_unreachable)
    return formats.text(report, allow_unreachable)


def drift_flow(
    spec: Path,
    fmt: str,
    limit: str | None,
    allow_unreachable: bool,
    fix: bool,
    output: Path | None,
    console: Console,
    shard: str | None = None,
    extra_vars: dict[str, Any] | None = None,
) -> int:
    from clusterforge.run.ansible import strategy_env

    strategy_env()  # a bad $CLUSTERFORGE_ANSIBLE_STRATEGY is refused before anything runs
    plan, inv = load_plan(spec)
    report = drift_recorded(plan.doc, inv, limit, allow_unreachable, spec, shard=shard, extra_vars=extra_vars)
    text = render(report, fmt, allow_unreachable)
    console.out(terminal_text(text), end="", highlight=False)
    if output:
        output.write_text(text)
    if fix and report.drifted(allow_unreachable):
        nodes = sorted({i.node for i in report.items if i.node not in report.unreachable})
        if nodes:
            from clusterforge.run.pipeline import pool_manager, print_report
            from clusterforge.run.provision import Options, provision_recorded

            console.print(f"[bold]»[/] fixing {safe(', '.join(nodes))}")
            opts = Options(limit=",".join(nodes))
            rep = provision_recorded(plan.doc, inv, opts, pool_manager(plan.doc), console, spec)
            print_report(rep, console)
            from clusterforge.certify.pipeline import certify_flow

            certify_flow(spec, tier="quick", limit=",".join(nodes), admit=True, console=console)
            report = drift_recorded(plan.doc, inv, limit, allow_unreachable, spec, shard=shard)
            text = render(report, fmt, allow_unreachable)
            console.out(terminal_text(text), end="", highlight=False)
            if output:
                output.write_text(text)
    if report.errors and not report.drifted(allow_unreachable):
        return int(ExitCode.TOOL_FAILED)
    return int(ExitCode.NOT_AS_DECLARED if report.drifted(allow_unreachable) else ExitCode.OK)
