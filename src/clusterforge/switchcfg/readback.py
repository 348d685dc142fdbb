"""The result of reading a fabric device's running configuration back against what clusterforge renders for
it (a SONiC switch: sonic_readback.py; a Cumulus Linux switch: nvue_readback.py; an OpenSM subnet manager:
opensm_readback.py): what deviates (item, expected, found, and the fix where the comparison knows one), what
was checked, what was not given."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Deviation:
    item: str  # "Ethernet0 mtu", "opensm.conf routing_engine", ...
    expected: str
    found: str
    fix: str = ""


@dataclass
class Readback:
    subject: str  # the switch's or the fabric's name
    deviations: list[Deviation] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.deviations

    def add(self, item: str, expected: object, found: object, fix: str = "") -> None:
        self.deviations.append(Deviation(item, str(expected), str(found), fix))

    def document(self) -> dict[str, Any]:
        """ok, checked, not_checked, deviations (a deviation's `fix` only where there is one)."""
        return {
            "ok": self.ok,
            "checked": self.checked,
            "not_checked": self.not_checked,
            "deviations": [{k: v for k, v in d.__dict__.items() if k != "fix" or v} for d in self.deviations],
        }

    def lines(self, title: str) -> list[str]:
        """The text report: the title with the verdict, one line per deviation (and its fix), what was and
        was not checked."""
        out = [f"{title}: {'as planned' if self.ok else f'{len(self.deviations)} deviation(s)'}"]
        for d in self.deviations:
            out.append(f"  {d.item}: expected {d.expected}; found {d.found}")
            out += [f"    fix: {d.fix}"] if d.fix else []
        out.append(f"  checked: {', '.join(self.checked) or 'nothing'}")
        out += [f"  not checked: {', '.join(self.not_checked)}"] if self.not_checked else []
        return out
