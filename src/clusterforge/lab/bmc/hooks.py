"""The lab BMC's reset hook: do to the lab node what a Redfish ComputerSystem.Reset does to a server.

    python -m clusterforge.lab.bmc.hooks PLAN.json NODE RESET_TYPE

Run detached by the BMC (it answers the reset at once, as a real BMC does, and the host follows).
GracefulRestart asks the node's systemd to reboot (the supervisor boots it again: a lab "warm reset");
ForceRestart and PowerCycle stop the node and start it again; On/ForceOn start it; ForceOff stops it;
GracefulShutdown asks it to power off (the supervisor leaves it off).
"""

from __future__ import annotations

import sys
from typing import Any, Protocol


class LabLike(Protocol):
    def exec(self, name: str, argv: list[str], input: None = None, timeout: float = 60.0) -> Any: ...
    def node_up(self, name: str, wait: bool = False, timeout: float = 60.0) -> None: ...
    def node_down(self, name: str) -> None: ...


ACTIONS: dict[str, tuple[str, ...]] = {
    "GracefulRestart": ("exec:systemctl reboot",),
    "ForceRestart": ("down", "up"),
    "PowerCycle": ("down", "up"),
    "On": ("up",),
    "ForceOn": ("up",),
    "ForceOff": ("down",),
    "GracefulShutdown": ("exec:systemctl poweroff",),
}


def apply(lab: LabLike, node: str, reset_type: str) -> list[str]:
    """Carry out `reset_type` on `node`; returns the steps taken (for the hook log and tests)."""
    steps = ACTIONS.get(reset_type)
    if steps is None:
        raise ValueError(f"reset type {reset_type!r} has no lab action (have {', '.join(ACTIONS)})")
    for step in steps:
        if step.startswith("exec:"):
            lab.exec(node, step[len("exec:") :].split(), timeout=30.0)
        elif step == "down":
            lab.node_down(node)
        elif step == "up":
            lab.node_up(node, wait=False)
    return list(steps)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m clusterforge.lab.bmc.hooks PLAN.json NODE RESET_TYPE", file=sys.stderr)
        return 2
    from clusterforge.lab import Lab

    plan, node, reset_type = args
    steps = apply(Lab(plan), node, reset_type)
    print(f"{node}: {reset_type} -> {', '.join(steps)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
