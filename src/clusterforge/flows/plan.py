"""The plan as every flow gets it: spec → plan → the inventory written with the target's variables."""

from __future__ import annotations

from pathlib import Path

from clusterforge import targets
from clusterforge.plan import Plan, build_plan
from clusterforge.plan import outputs as plan_outputs
from clusterforge.remote import checker_bundle
from clusterforge.spec import load_spec

GENERATED = Path("inventory/generated")


def write_outputs(plan: Plan, out_root: Path, *, svg: bool = True) -> Path:
    """`clusterforge.plan.outputs.write_outputs` with what the plan's target adds to the inventory, and the
    node checker program (built from this clusterforge's validators) beside it."""
    overrides = targets.for_plan(plan.doc).inventory_overrides(plan.doc)
    files = {checker_bundle.INVENTORY_FILE: checker_bundle.build()}
    return plan_outputs.write_outputs(plan, out_root, svg=svg, overrides=overrides, files=files)


def load_plan(spec: Path, out: Path = GENERATED) -> tuple[Plan, Path]:
    """Validate the spec, compile the plan and write the inventory; returns (Plan, inventory folder)."""
    plan = build_plan(load_spec(spec))
    return plan, write_outputs(plan, out, svg=True)
