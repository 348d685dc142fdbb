"""The local lab: simulated GPU nodes (systemd-nspawn) on this machine. See docs/lab.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusterforge.lab.lab import Lab, LabError

__all__ = ["Lab", "LabError"]


def __getattr__(name: str) -> Any:  # lazy: `clusterforge.lab.sim` must stay importable on its own
    if name in __all__:
        from clusterforge.lab import lab

        return getattr(lab, name)
    raise AttributeError(name)
