"""A sushy-tools systems driver: the fake driver plus a BIOS with real pending semantics.

sushy-emulator's fake driver serves a ComputerSystem without a BIOS (its `get_bios` raises 501). This
subclass keeps sushy's Redfish protocol layer (routes, templates, basic auth, TLS) and adds, per system:

* `Attributes` of the `Bios` resource = the current values (`bios_current`);
* `Bios/Settings` = current values with the staged ones over them; a PATCH there is validated against the
  registry (unknown attribute or value → HTTP 400, as a real BMC answers) and only *staged*
  (`bios_pending`), never applied at once;
* staged values become current at the next system reset: `ComputerSystem.Reset` (On from Off, any
  restart, power cycle) or, for a lab node, when the node is seen booting again (its supervisor's
  `state.json` says `running` since after the change was staged: an OS reboot of the node);
* `BiosVersion` of the ComputerSystem = `CLUSTERFORGE_BIOS_VERSION` (the lab spec's `software.bios`;
  omitted when unset), the system firmware the lab node ships with (no firmware update is emulated);
* power actions take effect at once (the fake driver delays them 1-11 s) and may call a reset hook
  (argv + reset type) that does the same to a lab node.

Registered by `clusterforge.lab.bmc.emulator`, which replaces `fakedriver.FakeDriver` before sushy's
application builds its systems driver. The configuration keys are `CLUSTERFORGE_BIOS_REGISTRY`,
`CLUSTERFORGE_BIOS_VERSION`, `CLUSTERFORGE_BOOT_STATE_FILE` and `CLUSTERFORGE_RESET_HOOK` (see
`clusterforge.lab.bmc`).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import flask
from sushy_tools import error
from sushy_tools.emulator.resources.systems.fakedriver import FakeDriver

_LOCK = threading.RLock()
ON_STATES = ("On", "ForceOn")
OFF_STATES = ("ForceOff", "GracefulShutdown")
RESTART_STATES = ("GracefulRestart", "ForceRestart", "PowerCycle")


def check_value(registry: dict[str, dict[str, Any]], name: str, value: Any) -> str | None:
    """Why `value` is not acceptable for attribute `name` (None when it is)."""
    spec = registry.get(name)
    if spec is None:
        return f"PropertyUnknown: {name} is not an attribute of this BIOS"
    kind = spec.get("type", "str")
    if kind == "enum" and value not in spec.get("values", []):
        return f"PropertyValueNotInList: {value!r} is not one of {spec.get('values')} for {name}"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"PropertyValueTypeError: {name} takes an integer, not {value!r}"
        if not spec.get("min", value) <= value <= spec.get("max", value):
            return f"PropertyValueOutOfRange: {value} for {name} ({spec.get('min')}..{spec.get('max')})"
    if kind == "str" and not isinstance(value, str):
        return f"PropertyValueTypeError: {name} takes a string, not {value!r}"
    return None


class BiosFakeDriver(FakeDriver):
    """The fake driver with a BIOS whose changes wait for a reset."""

    @property
    def registry(self) -> dict[str, dict[str, Any]]:
        return dict(self._config.get("CLUSTERFORGE_BIOS_REGISTRY") or {})

    # -- state -------------------------------------------------------------------------------------
    def _update_if_needed(self, system: dict[str, Any]) -> dict[str, Any]:
        system = super()._update_if_needed(system)
        if system.get("bios_pending") and self._booted_since(float(system.get("bios_pending_since") or 0)):
            self._apply_pending(system, "the node booted again")
        return system

    def _booted_since(self, t: float) -> bool:
        """True when the lab node's supervisor reports a boot that started after `t`."""
        path = self._config.get("CLUSTERFORGE_BOOT_STATE_FILE")
        if not path:
            return False
        try:
            st = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            return False
        return bool(st.get("state") == "running" and float(st.get("since", 0)) > t)

    def _apply_pending(self, system: dict[str, Any], why: str) -> None:
        pending = dict(system.get("bios_pending") or {})
        if not pending:
            return
        current = dict(system.get("bios_current") or {})
        current.update(pending)
        self._logger.info(
            "system %s: applied staged BIOS settings %s (%s)", system.get("name"), sorted(pending), why
        )
        self._update(system, bios_current=current, bios_pending={}, bios_pending_since=None)

    # -- BIOS --------------------------------------------------------------------------------------
    def get_versions(self, identity: str) -> dict[str, Any]:
        """Firmware versions of the system (sushy renders ``BiosVersion`` of the ComputerSystem)."""
        self._get(identity)  # an unknown system is NotFound, as for every other resource
        version = self._config.get("CLUSTERFORGE_BIOS_VERSION")
        return {"BiosVersion": str(version)} if version else {}

    def get_bios(self, identity: str) -> dict[str, Any]:
        with _LOCK:
            system = self._get(identity)
            current = dict(system.get("bios_current") or {})
            if flask.has_request_context() and flask.request.path.rstrip("/").endswith("/Settings"):
                return {**current, **(system.get("bios_pending") or {})}
            return current

    def set_bios(self, identity: str, attributes: Any) -> None:
        if not isinstance(attributes, dict) or not attributes:
            raise error.BadRequest("PATCH Bios/Settings needs a non-empty Attributes object")
        problems = [p for p in (check_value(self.registry, k, v) for k, v in attributes.items()) if p]
        if problems:
            raise error.BadRequest("; ".join(problems))
        with _LOCK:
            system = self._get(identity)
            current = system.get("bios_current") or {}
            pending = {**(system.get("bios_pending") or {}), **attributes}
            pending = {k: v for k, v in pending.items() if current.get(k) != v}
            self._update(system, bios_pending=pending, bios_pending_since=time.time() if pending else None)

    def reset_bios(self, identity: str) -> None:
        defaults = {k: v.get("default") for k, v in self.registry.items()}
        with _LOCK:
            system = self._get(identity)
            current = system.get("bios_current") or {}
            pending = {k: v for k, v in defaults.items() if current.get(k) != v}
            self._update(system, bios_pending=pending, bios_pending_since=time.time() if pending else None)

    # -- power ---------------------------------------------------------------------------------------
    def set_power_state(self, identity: str, state: str) -> None:
        with _LOCK:
            system = self._get(identity)
            power = system.get("power_state", "Off")
            if state == "PushPowerButton":
                state = "GracefulShutdown" if power == "On" else "On"
            if state in ON_STATES:
                if power == "On":
                    return
                self._apply_pending(system, f"power {state}")
                self._update(system, power_state="On", pending_power=None)
            elif state in OFF_STATES:
                if power == "Off":
                    return
                self._update(system, power_state="Off", pending_power=None)
            elif state in RESTART_STATES:
                self._apply_pending(system, f"reset {state}")
                self._update(system, power_state="On", pending_power=None)
            elif state == "Nmi":
                return
            else:
                raise error.NotSupportedError(f"Power state {state} is not supported")
        self._reset_hook(system.get("name", identity), state)

    def _reset_hook(self, name: str, state: str) -> None:
        """Do the same to the lab node (asynchronously: a BMC answers the reset before the host boots)."""
        argv = self._config.get("CLUSTERFORGE_RESET_HOOK")
        if not argv:
            return
        log = self._config.get("CLUSTERFORGE_RESET_HOOK_LOG") or "/dev/null"
        self._logger.info("system %s: reset hook %s %s", name, argv, state)
        with open(log, "ab") as out:
            subprocess.Popen(
                [*argv, state], stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
            )
