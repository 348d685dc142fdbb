"""The plan's expected topology in the formats vendor tools take, so a site can cross-check with them.

- ``ibdiagnet-topo``: the IBDM topology file that `ibdiagnet --topo_file` / `ibdmchk` read (ibutils
  man page ibdm-topo-file(1), https://manpages.ubuntu.com/manpages/jammy/man1/ibdm-topo-file.1.html):
  one section per system - a ``SYSTEM-TYPE SYSTEM-NAME`` line, then ``LOCAL-PORT -> REM-SYS-TYPE
  REM-SYS-NAME REM-PORT`` lines, sections separated by an empty line; ports are ``P<n>`` (NVIDIA's UFM
  topo-file example, https://docs.nvidia.com/networking/display/UFMValidationTool/Topo+File, writes HCA
  ends as ``HCA_<dev> <host> <dev>/P1``; the system type of a node is written ``HCA_<hca>`` the same way).
  Every cable is listed from both systems' sections.
- ``dot``: the undirected Graphviz graph Cumulus PTM reads from /etc/ptm.d/topology.dot, edges
  ``"<device>":"<port>" -- "<device>":"<port>";`` (Cumulus Linux PTM docs,
  https://docs.nvidia.com/networking-ethernet-software/cumulus-linux/Layer-1-and-Switch-Ports/Prescriptive-Topology-Manager-PTM)
  with the ports in the devices' own naming (netdev, switch OS port name).

Names are written as the plan has them; a name with whitespace or a quote is refused (InputError) since
neither format can carry it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clusterforge.errors import InputError, Problem
from clusterforge.fabric.model import ExpectedLink

_SAFE = re.compile(r"^[A-Za-z0-9_.:/\-]+$")


def _check(names: Iterable[str]) -> None:
    bad = sorted({n for n in names if not _SAFE.match(n)})
    if bad:
        raise InputError(
            [
                Problem(
                    "plan", "", "device and port names of letters, digits and _.:/-", repr(b), "rename it"
                )
                for b in bad[:5]
            ],
            "fabric export",
        )


def ibdiagnet_topo(links: Iterable[ExpectedLink], models: dict[str, str]) -> str:
    """`models`: switch name -> model (QM9700); nodes are written as HCA_<hca> systems."""
    sections: dict[tuple[str, str], list[tuple[int, str]]] = {}
    ib = [e for e in links if e.width]  # InfiniBand links only
    _check(x for e in ib for x in (e.a.device, e.a.port, e.b.device, e.b.port))

    def system(e: ExpectedLink, end_is_a: bool) -> tuple[str, str, str]:
        end = e.a if end_is_a else e.b
        if e.kind == "node-leaf" and end_is_a:
            return f"HCA_{end.port}", end.device, f"{end.port}/P1"
        return models.get(end.device, "SWITCH"), end.device, f"P{end.port}"

    for e in ib:
        at, an, ap = system(e, True)
        bt, bn, bp = system(e, False)
        rate = f"-{e.width}-{e.speed_gbps // 4}G->" if e.width == "4x" else "->"
        sections.setdefault((at, an), []).append(
            (int(e.a.port) if e.a.port.isdigit() else 0, f"{ap.split('/')[-1]} {rate} {bt} {bn} {bp}")
        )
        sections.setdefault((bt, bn), []).append((int(e.b.port), f"{bp} {rate} {at} {an} {ap}"))
    out: list[str] = []
    for (stype, name), lines in sorted(
        sections.items(), key=lambda kv: (kv[0][0].startswith("HCA"), kv[0][1])
    ):
        out.append(f"{stype} {name}")
        out += [ln for _, ln in sorted(lines)]
        out.append("")
    return "\n".join(out)


def ptm_dot(links: Iterable[ExpectedLink], roles: dict[str, str], name: str) -> str:
    ls = list(links)
    _check(x for e in ls for x in (e.a.device, e.a_name, e.b.device, e.b_name))
    _check([name])
    out = [f'graph "{name}" {{']
    for dev in sorted({x for e in ls for x in (e.a.device, e.b.device)}):
        out.append(f'  "{dev}" [role="{roles.get(dev, "server")}"];')
    for e in ls:
        out.append(f'  "{e.a.device}":"{e.a_name}" -- "{e.b.device}":"{e.b_name}";')
    out.append("}")
    return "\n".join(out) + "\n"
