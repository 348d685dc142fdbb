"""Pulumi unit-test mocks that record what the engine would see, and a runner for the stack program."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import ROOT

__all__ = ["FIXTURES", "REPO", "ROOT", "RecordingMocks", "RecordingMonitor", "run_stack", "spec_config"]

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class Recorded:
    """One RegisterResource call as the engine would see it."""

    typ: str
    name: str
    inputs: dict[str, Any]
    custom: bool
    urn: str = ""
    parent: str = ""
    dependencies: list[str] = field(default_factory=list)
    delete_before_replace: bool = False


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource: type, name, inputs (what `new_resource` receives), parent and options."""

    resources: list[Recorded] = field(default_factory=list)
    index: dict[tuple[str, str], Recorded] = field(default_factory=dict)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        rec = Recorded(args.typ, args.name, dict(args.inputs), bool(args.custom))
        self.resources.append(rec)
        self.index[(args.typ, args.name)] = rec  # names are unique per type in this stack
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None

    def of_type(self, typ: str) -> list[Recorded]:
        return [r for r in self.resources if r.typ == typ]

    def by_urn(self) -> dict[str, Recorded]:
        return {r.urn: r for r in self.resources}

    def parent_of(self, r: Recorded) -> Recorded | None:
        return self.by_urn().get(r.parent)


class RecordingMonitor(MockMonitor):
    """Adds what MockResourceArgs leaves out: parent URN, dependencies, deleteBeforeReplace."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording = mocks

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            rec = self.recording.index[(request.type, request.name)]  # calls may interleave
            rec.urn, rec.parent = response.urn, request.parent
            rec.dependencies = list(request.dependencies)
            rec.delete_before_replace = bool(request.deleteBeforeReplace)
        return response


def spec_config(spec: str, **extra: str) -> dict[str, str]:
    return {"clusterforge:spec": spec, **{f"clusterforge:{k}": v for k, v in extra.items()}}


@dataclass
class StackRun:
    cluster: Any
    outputs: dict[str, Any]
    collected: Any = None


def run_stack(collect: Callable[[Any, dict[str, Any]], Any] | None = None) -> StackRun:
    """Run the stack program under the mocks set by `stack(...)`; returns once every RPC is done.

    `collect(cluster, outputs)` may be a coroutine function: it runs inside Pulumi's loop (Output.future(),
    is_secret()) and its result is kept in `.collected`.
    """
    import asyncio

    from clusterforge.pulumi.program import build

    box: dict[str, Any] = {}

    @pulumi.runtime.test
    def _run() -> Any:
        cluster, outs = build(REPO)
        box["run"] = StackRun(cluster, outs)

        async def _collect() -> None:
            if collect is not None:
                box["run"].collected = await collect(cluster, outs)

        return asyncio.ensure_future(_collect())

    _run()
    return box["run"]
