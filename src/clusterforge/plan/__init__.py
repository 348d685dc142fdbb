"""Plan: compile a spec into nodes, addresses, fabrics and expectations, and render the outputs."""

from clusterforge.plan.build import Plan, build_plan

__all__ = ["Plan", "build_plan"]
