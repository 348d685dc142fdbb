"""The lab's leaf switches as LLDP speakers: real LLDPDUs (IEEE 802.1AB) sent on each node rail's host-side
veth end, so the node's own lldpd hears the switch and port its rail is attached to.

Which switch a rail is attached to comes from the lab's real wiring: the rail bridge the host end is a port
of (`ip -j link show` master). Bridge `cfbr-<fabric>-<r>` stands for the planned leaf of each node's rail
`r`, at the port the plan gives that node's rail `r` (plan/desired_fabric.rail_neighbours: the names
`cables.csv` and the cabling check use). Moving a node's rail-0 host end onto the rail-1 bridge therefore
makes the node hear rail 1's leaf and port on rail 0 - a miscabling, as on hardware. `swaps` crosses two
host ends' far ends without touching the wiring (for tests that cannot re-attach links).

When what a host end should announce changes, a shutdown LLDPDU (TTL 0) for the old identity goes first,
so the node's lldpd drops the old neighbour at once instead of after its TTL (802.1AB 9.2.7.7.2).

Frames come from hw/lldp_frame.py (pure, tested byte for byte against the 802.1AB TLV layout and on a real
switch frame); sending needs CAP_NET_RAW (root on the host).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from clusterforge.hw.lldp_frame import frame, lldpdu
from clusterforge.lab import net, procs
from clusterforge.lab.labplan import LabPlan, load
from clusterforge.plan.desired_fabric import fabric_entry, rail_neighbours

INTERVAL_S = 5  # the lab's msgTxInterval: a re-cabling shows within seconds
TTL_S = 4 * INTERVAL_S  # msgTxHold 4


# --- what each host end announces (pure) ---------------------------------------------------------------


def switch_mac(name: str) -> str:
    """A stable, locally administered MAC per switch name (the chassis ID the emulated leaf sends)."""
    h = hashlib.sha256(f"clusterforge-lab-switch/{name}".encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in h[:5])


@dataclass(frozen=True)
class Announcement:
    host_link: str
    node: str
    rail: int  # the node rail the host end belongs to
    bridge: str  # the bridge it is a port of now ("" = none: nothing is sent)
    switch: str
    port: str

    def pdu(self, ttl: int = TTL_S) -> bytes:
        if ttl == 0:
            return lldpdu(switch_mac(self.switch), self.port, 0)
        return lldpdu(switch_mac(self.switch), self.port, ttl, self.switch, self.port)


def announcements(
    plan: LabPlan,
    masters: Mapping[str, str | None] | None = None,
    swaps: Iterable[tuple[tuple[str, int], tuple[str, int]]] = (),
) -> list[Announcement]:
    """Per node rail host end: the switch and port it reaches through the bridge it is attached to
    (``masters``: host end -> bridge; None = as the lab wires it), then with the far ends of each
    ``((node, rail), (node, rail))`` pair crossed. A host end on no rail bridge announces nothing; only
    RoCE fabrics speak LLDP (InfiniBand rails are emulated by the simulated IB tools)."""
    ends: dict[tuple[str, str], tuple[str, str]] = {}  # (node, bridge) -> (switch, port)
    roce = [n for n in plan.nodes if n.fabric_type == "roce"]
    for n in roce:
        fabric = fabric_entry(plan.raw, n.fabric)
        if fabric is None or not n.rails:
            continue
        planned = {int(w["rail"]): w for w in rail_neighbours(n.raw)}
        for r in n.rails:
            w = planned[r.index]
            ends[(n.name, r.bridge)] = (str(w["switch"]), str(w["switch_port_name"]))
    out: list[Announcement] = []
    for n in roce:
        for r in n.rails:
            bridge = r.bridge if masters is None else (masters.get(r.host_link) or "")
            sw, port = ends.get((n.name, bridge), ("", ""))
            out.append(Announcement(r.host_link, n.name, r.index, bridge if sw else "", sw, port))
    index = {(a.node, a.rail): i for i, a in enumerate(out)}
    for x, y in swaps:
        if x not in index or y not in index:
            raise ValueError(f"no such node rail to swap: {x if x not in index else y}")
        i, j = index[x], index[y]
        a, b = out[i], out[j]
        out[i] = Announcement(a.host_link, a.node, a.rail, b.bridge, b.switch, b.port)
        out[j] = Announcement(b.host_link, b.node, b.rail, a.bridge, a.switch, a.port)
    return out


def masters_from_ip_json(text: str) -> dict[str, str | None]:
    """Link name -> its master (bridge) from ``ip -j link show``."""
    return {d["ifname"]: d.get("master") for d in json.loads(text or "[]")}


def host_mac(a: Announcement) -> str:
    """The source MAC of the emulated switch port (stable per switch and port)."""
    h = hashlib.sha256(f"clusterforge-lab-port/{a.switch}/{a.port}".encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in h[:5])


# --- sending (needs CAP_NET_RAW) ------------------------------------------------------------------------


def send(ifname: str, data: bytes) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((ifname, 0))
        s.send(data)


class Emulator:
    """Sends every host end's LLDPDU each interval; a changed attachment is first withdrawn (TTL 0)."""

    def __init__(self, plan: LabPlan, swaps: Iterable[tuple[tuple[str, int], tuple[str, int]]] = ()) -> None:
        self.plan = plan
        self.swaps = list(swaps)
        self.sent: dict[str, Announcement] = {}

    def tick(self) -> list[Announcement]:
        masters = masters_from_ip_json(net.ip("-j", "link", "show").stdout)
        now = announcements(self.plan, masters, self.swaps)
        for a in now:
            old = self.sent.get(a.host_link)
            # a node going down takes its link with it between the listing and the send: skip it this round
            with contextlib.suppress(OSError):
                if old is not None and old.switch and (old.switch, old.port) != (a.switch, a.port):
                    send(a.host_link, frame(host_mac(old), old.pdu(ttl=0)))
                if a.switch:
                    send(a.host_link, frame(host_mac(a), a.pdu()))
            self.sent[a.host_link] = a
        return now

    def stop(self) -> None:
        for a in self.sent.values():
            if a.switch:
                with contextlib.suppress(OSError):  # the link is gone with its node
                    send(a.host_link, frame(host_mac(a), a.pdu(ttl=0)))
        self.sent.clear()

    def run(self, interval: float = INTERVAL_S) -> None:
        try:
            while True:
                self.tick()
                time.sleep(interval)
        finally:
            self.stop()


# --- the lab's supervised process -------------------------------------------------------------------------


def _folder(state_dir: Path) -> Path:
    return Path(state_dir).resolve() / "lldp"


def running(state_dir: Path) -> int | None:
    """The emulator's pid when it runs (its command line names this module)."""
    pid = procs.live_pid(_folder(state_dir) / "emulator.pid")
    if pid is None:
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if __name__.encode() in cmdline or b"clusterforge.lab.lldp_emulator" in cmdline else None


def start(plan_doc: Mapping[str, object], state_dir: Path) -> int | None:
    """Start (or keep, when it runs for the same plan) the lab's LLDP speaker; none when the plan has no
    RoCE fabric (a running one is stopped). Returns its pid."""
    folder = _folder(state_dir)
    if not any(f.get("type") == "roce" for f in _fabrics(plan_doc)):
        stop(state_dir)
        return None
    folder.mkdir(parents=True, exist_ok=True)
    plan_file, text = folder / "plan.json", json.dumps(plan_doc, sort_keys=True)
    pid = running(state_dir)
    if pid is not None and plan_file.exists() and plan_file.read_text() == text:
        return pid
    procs.stop_pid(pid)
    plan_file.write_text(text)
    return procs.spawn_daemon(
        [sys.executable, "-m", "clusterforge.lab.lldp_emulator", str(plan_file)],
        folder / "emulator.pid",
        folder / "emulator.log",
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def stop(state_dir: Path) -> None:
    """SIGTERM: the emulator withdraws every neighbour (TTL 0) before it exits."""
    procs.stop_pid(running(state_dir))
    (_folder(state_dir) / "emulator.pid").unlink(missing_ok=True)


def _fabrics(plan_doc: Mapping[str, object]) -> list[Mapping[str, object]]:
    fabrics = plan_doc.get("fabrics")
    if isinstance(fabrics, Mapping):
        fabrics = list(fabrics.values())
    return [f for f in fabrics or [] if isinstance(f, Mapping)] if isinstance(fabrics, list) else []


def _pair(text: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """``node:rail,node:rail`` -> ((node, rail), (node, rail))."""
    a, _, b = text.partition(",")
    na, _, ra = a.rpartition(":")
    nb, _, rb = b.rpartition(":")
    return (na, int(ra)), (nb, int(rb))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m clusterforge.lab.lldp_emulator", description=__doc__)
    p.add_argument("plan", help="plan.json of the lab")
    p.add_argument("--swap", action="append", default=[], type=_pair, help="cross node:rail,node:rail")
    p.add_argument("--interval", type=float, default=INTERVAL_S)
    p.add_argument("--once", action="store_true", help="send one round and exit")
    a = p.parse_args(argv)
    em = Emulator(load(a.plan), a.swap)
    # a supervisor stops it with SIGTERM: leave through `run`'s finally, which withdraws every neighbour
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if a.once:
        for x in em.tick():
            print(f"{x.host_link} ({x.node} rail {x.rail}) <- {x.switch or '-'} {x.port}")
        return 0
    em.run(a.interval)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
