"""iproute2's ``dcb`` (Linux DCB netlink) on the simulated ConnectX NICs: ``pfc``, ``app``, ``ets`` and
``apptrust``, reading and writing the same NIC QoS state as ``mlnx_qos`` (one truth for both RDMA stacks).

Modelled on the upstream mlx5 driver and Debian 12's iproute2 (6.1): the first DSCP APP entry switches the
port to DSCP trust and deleting the last one switches it back to PCP (mlx5e_dcbnl_ieee_setapp/delapp);
``apptrust`` is unknown to iproute2 6.1 (and mlx5 has no apptrust ops either). JSON as that release prints
it (``[dscp, prio]`` pairs; 6.5+ adds a ``" "`` element the parser ignores); plain output as dcb prints it,
DSCP names from /etc/iproute2/rt_dsfield unless ``-N``. Settings are lost at reboot, like mlnx_qos's.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from . import state as S

OBJECTS = ("pfc", "app", "ets", "apptrust")
TSA = ("strict", "cbs", "ets", "vendor")
# rt_dsfield names (dscp -> name) as dcb prints DSCP keys without -N
DSCP_NAMES = (
    {8 * c: f"CS{c}" for c in range(8)}
    | {8 * c + 2 * d: f"AF{c}{d}" for c in range(1, 5) for d in range(1, 4)}
    | {46: "EF"}
)


class DcbError(Exception):
    pass


def _qos(nic: dict[str, Any]) -> dict[str, Any]:
    q: dict[str, Any] = nic["qos"]
    q.setdefault("app", [])  # explicit APP-table entries [dscp, prio] (state written before dcb existed)
    return q


def _mapping(words: list[str], what: str, parse_value: Any, max_key: int = 7) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for w in words:
        key, sep, value = w.partition(":")
        if not sep:
            raise DcbError(f"Invalid {what} mapping {w}")
        v = parse_value(value)
        keys = range(max_key + 1) if key == "all" else [int(key)] if key.isdigit() else []
        if not keys or any(k > max_key for k in keys):
            raise DcbError(f"In {what}:{w} mapping, key is expected to be 0..{max_key}")
        out.update(dict.fromkeys(keys, v))
    return out


def _on_off(v: str) -> int:
    if v not in ("on", "off"):
        raise DcbError(f'"{v}" is not a valid on/off value')
    return 1 if v == "on" else 0


def _prio(v: str) -> int:
    if not v.isdigit() or int(v) > 7:
        raise DcbError(f"Invalid priority {v}, expected 0..7")
    return int(v)


def _dscp(key: str) -> int:
    """A DSCP key as dcb takes it: 0..63 or an rt_dsfield name (CS6, AF31, EF)."""
    named = {n: d for d, n in DSCP_NAMES.items()}
    if key in named:
        return named[key]
    if not key.isdigit() or int(key) > 63:
        raise DcbError(f"Invalid dscp-prio key {key}, expected 0..63 or a DSCP name")
    return int(key)


def _params(args: list[str], known: tuple[str, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur = None
    for a in args:
        if a in known:
            cur = a
            out[cur] = []
        elif cur is None:
            raise DcbError(f'What is "{a}"?')
        else:
            out[cur].append(a)
    return out


def _print(doc: dict[str, Any], text: list[str], opts: set[str]) -> str:
    if "-j" in opts:
        if "-p" in opts:
            return json.dumps(doc, indent=4) + "\n"
        return json.dumps(doc, separators=(",", ":")) + "\n"
    return "".join(line + " \n" for line in text)


def pfc(cmd: str, q: dict[str, Any], args: list[str], opts: set[str], fault_off: bool) -> str:
    if cmd == "set":
        p = _params(args, ("prio-pfc", "macsec-bypass", "delay"))
        for prio, on in _mapping(p.get("prio-pfc", []), "pfc", _on_off).items():
            q["pfc"][prio] = on
        if "delay" in p:
            q["pfc_delay"] = int(p["delay"][0], 0)
        return ""
    if cmd != "show":
        raise DcbError(f'Unknown command "{cmd}"')
    prio_pfc = [0] * 8 if fault_off else list(q["pfc"])
    doc: dict[str, Any] = {
        "pfc_cap": 8,
        "macsec_bypass": False,
        "delay": int(q.get("pfc_delay", 0)),
        "prio_pfc": [bool(v) for v in prio_pfc],
    }
    text = [
        f"pfc-cap 8 macsec-bypass off delay {doc['delay']}",
        "prio-pfc " + " ".join(f"{i}:{'on' if v else 'off'}" for i, v in enumerate(prio_pfc)),
    ]
    if "-s" in opts:
        doc |= {"requests": [0] * 8, "indications": [0] * 8}
        text += ["requests " + " ".join(f"{i}:0" for i in range(8))]
        text += ["indications " + " ".join(f"{i}:0" for i in range(8))]
    return _print(doc, text, opts)


def _set_app(q: dict[str, Any], entries: list[list[int]]) -> None:
    had = bool(q["app"])
    q["app"] = entries
    q["dscp2prio"] = {str(d): d >> 3 for d in range(64)} | {str(d): p for d, p in entries}
    if entries and not had:
        q["trust"] = "dscp"  # mlx5: the first DSCP APP entry switches the port to DSCP trust
    elif had and not entries:
        q["trust"] = "pcp"


def app(cmd: str, q: dict[str, Any], args: list[str], opts: set[str]) -> str:
    selectors = ("dscp-prio", "default-prio", "ethtype-prio", "pcp-prio", "port-prio")
    p = _params(args, selectors)
    unsupported = set(p) - {"dscp-prio"}
    if cmd in ("add", "del", "replace") and unsupported:
        raise DcbError(f"{sorted(unsupported)[0]}: not supported by this device")
    entries: list[list[int]] = [list(e) for e in q["app"]]
    if cmd in ("add", "del", "replace"):
        new = []
        for w in p.get("dscp-prio", []):
            key, sep, prio = w.partition(":")
            if not sep:
                raise DcbError(f"Invalid dscp-prio mapping {w}")
            new.append([_dscp(key), _prio(prio)])
        if cmd == "add":
            entries += [e for e in new if e not in entries]
        elif cmd == "del":
            entries = [e for e in entries if e not in new]
        else:
            replaced = {d for d, _ in new}
            entries = [e for e in entries if e[0] not in replaced] + new
        _set_app(q, entries)
        return ""
    if cmd == "flush":
        _set_app(q, [] if not p or "dscp-prio" in p else entries)
        return ""
    if cmd != "show":
        raise DcbError(f'Unknown command "{cmd}"')
    if not entries or (p and "dscp-prio" not in p):
        return _print({}, [], opts)
    names = [str(d) if "-N" in opts else DSCP_NAMES.get(d, str(d)) for d, _ in entries]
    text = ["dscp-prio " + " ".join(f"{k}:{pr}" for k, (_, pr) in zip(names, entries, strict=True))]
    return _print({"dscp_prio": entries}, text, opts)


def ets(cmd: str, q: dict[str, Any], args: list[str], opts: set[str]) -> str:
    if cmd == "set":
        p = _params(args, ("prio-tc", "tc-tsa", "tc-bw"))
        for prio, tc in _mapping(p.get("prio-tc", []), "prio-tc", _prio).items():
            q["prio_tc"][prio] = tc
        for tc, tsa in _mapping(p.get("tc-tsa", []), "tc-tsa", lambda v: v).items():
            if tsa not in TSA:
                raise DcbError(f'"{tsa}" is not a valid TSA, expected one of {", ".join(TSA)}')
            q["tsa"][tc] = tsa
        bw = _mapping(p.get("tc-bw", []), "tc-bw", int)
        if bw:
            tcbw = list(q["tcbw"])
            for tc, v in bw.items():
                tcbw[tc] = v
            if sum(v for tc, v in enumerate(tcbw) if q["tsa"][tc] == "ets") not in (0, 100):
                raise DcbError("Attribute write: Invalid argument")
            q["tcbw"] = tcbw
        return ""
    if cmd != "show":
        raise DcbError(f'Unknown command "{cmd}"')
    doc = {
        "willing": False,
        "ets_cap": 8,
        "cbs": False,
        "tc_bw": list(q["tcbw"]),
        "tc_tsa": list(q["tsa"]),
        "prio_tc": list(q["prio_tc"]),
    }
    text = [
        "willing off ets-cap 8 cbs off",
        "tc-bw " + " ".join(f"{i}:{v}" for i, v in enumerate(q["tcbw"])),
        "tc-tsa " + " ".join(f"{i}:{v}" for i, v in enumerate(q["tsa"])),
        "prio-tc " + " ".join(f"{i}:{v}" for i, v in enumerate(q["prio_tc"])),
    ]
    return _print(doc, text, opts)


def main(argv: list[str]) -> int:
    opts = set()
    args = list(argv)
    while args and args[0].startswith("-"):
        a = args.pop(0)
        opts.add({"--json": "-j", "--pretty": "-p", "--Numeric": "-N", "--statistics": "-s"}.get(a, a))
    if not args or args[0] == "help":
        sys.stderr.write(
            "Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { app | ets | pfc }\n"
        )
        return 0 if args else 255
    obj = args.pop(0)
    if obj not in OBJECTS or obj == "apptrust":  # iproute2 6.1 knows no apptrust object
        sys.stderr.write(f'Object "{obj}" is unknown, try "dcb help".\n')
        return 255
    cmd = args.pop(0) if args else "show"
    if len(args) < 2 or args[0] != "dev":
        sys.stderr.write(f"dcb {obj} {cmd}: dev DEV is required\n")
        return 255
    dev, rest = args[1], args[2:]
    try:
        with S.locked() as st:
            nic = next((n for n in st["nics"] if n["netdev"] == dev), None)
            if nic is None or S.link_layer(nic) != "Ethernet":
                raise DcbError("Attribute read: Operation not supported")
            q = _qos(nic)
            if obj == "pfc":
                fault = nic["rail"] in S.targets(st, "pfc-off", "rail", len(st["nics"]))
                out = pfc(cmd, q, rest, opts, fault)
            elif obj == "app":
                out = app(cmd, q, rest, opts)
            else:
                out = ets(cmd, q, rest, opts)
    except (DcbError, ValueError, IndexError) as e:
        sys.stderr.write(f"{e}\n")
        return 255
    sys.stdout.write(out)
    return 0
