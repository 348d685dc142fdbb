"""Plan: compile a spec into nodes, addresses, fabrics and expectations, and render the outputs.

`Plan` and `build_plan` load lazily: `clusterforge.plan.expect` (read by every validator process) must not
pay for the compiler's imports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusterforge.plan.build import Plan, build_plan

__all__ = ["Plan", "build_plan"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from clusterforge.plan import build

        return getattr(build, name)
    raise AttributeError(name)
