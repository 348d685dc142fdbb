"""Pulumi unit-test mocks that record what the engine would see, and a runner for the stack program."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import ROOT

__all__ = [
    "FIXTURES",
    "REPO",
    "ROOT",
    "RecordingMocks",
    "RecordingMonitor",
    "record_fixture",
    "run_stack",
    "spec_config",
]

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
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # URN -> registered outputs

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

    def outputs_of(self, typ: str, name: str) -> dict[str, Any]:
        return self.outputs[self.index[(typ, name)].urn]


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

    def RegisterResourceOutputs(self, request: Any) -> Any:  # what a component's register_outputs sends
        from pulumi.runtime import rpc

        self.recording.outputs[request.urn] = dict(rpc.deserialize_properties(request.outputs))
        return super().RegisterResourceOutputs(request)


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


FIXTURE_SPEC = "tests/unit/pulumi/fixtures/bm-small.yaml"
FIXTURE_JSON = FIXTURES / "stack-output-bm-small.json"
FIXTURE_CONFIG = {
    "clusterforge:spec": FIXTURE_SPEC,
    "clusterforge:bmcUsername": "root",
    "clusterforge:bmcPassword": "fixture-password",
}
FIXTURE_SECRETS = ["clusterforge:bmcPassword"]


async def as_cli_json(cluster: Any, outs: dict[str, Any]) -> str:
    """The text `pulumi stack output --json` prints for these outputs (secrets as "[secret]")."""
    import json

    doc: dict[str, Any] = {}
    for key, value in sorted(outs.items()):
        if isinstance(value, pulumi.Output):
            doc[key] = "[secret]" if await value.is_secret() else await value.future()
        else:
            doc[key] = value
    return json.dumps(doc, indent=2) + "\n"


def record_fixture() -> str:
    """Run the fixture stack under mocks and return its `pulumi stack output --json` text."""
    mocks = RecordingMocks()
    ROOT.set(None)
    pulumi.runtime.set_mocks(
        mocks, project="clusterforge", stack="bm-small", preview=False, monitor=RecordingMonitor(mocks)
    )
    pulumi.runtime.set_all_config(FIXTURE_CONFIG, FIXTURE_SECRETS)
    try:
        return str(run_stack(as_cli_json).collected)
    finally:
        pulumi.runtime.set_all_config({}, [])


if __name__ == "__main__":  # re-record: .venv/bin/python tests/unit/pulumi/pulumi_mocks.py
    FIXTURE_JSON.write_text(record_fixture())
    print(f"wrote {FIXTURE_JSON}")
