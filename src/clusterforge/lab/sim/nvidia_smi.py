"""``nvidia-smi``: queries, topology, NVLink, and the settings the roles make (-pm, -e, -mig, -r)."""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

from . import gpu as G
from . import smi_q, smi_query, smi_topo
from . import state as S


def hang_if_faulted(tool: str) -> None:
    """hung-tool fault: never return (until killed), like an nvidia-smi stuck in the driver."""
    try:
        st = S.load()
    except OSError:
        return
    f = S.fault(st, "hung-tool")
    if f is not None and tool in str(f.get("tool", "nvidia-smi")).split(","):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            time.sleep(3600)


def _select(st: dict[str, Any], spec: str | None) -> list[int] | None:
    if spec is None:
        return None
    gpus = S.visible_gpus(st)
    out = []
    for item in spec.split(","):
        item = item.strip()
        if item.isdigit():
            out.append(int(item))
            continue
        for i, g in enumerate(gpus):
            if item.lower() in (g["uuid"].lower(), g["bus_id"].lower(), g["bus_id"][4:].lower()):
                out.append(i)
    return out


def _opt(argv: list[str], *names: str) -> str | None:
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if n.startswith("--") and a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def _has(argv: list[str], *names: str) -> bool:
    return any(a in names for a in argv)


def _targets(st: dict[str, Any], sel: list[int] | None) -> list[dict[str, Any]]:
    gpus = S.visible_gpus(st)
    bad = [i for i in (sel or []) if i >= len(gpus)]
    if bad:
        raise G.DriverError("No devices were found\n" if not gpus else f"Invalid GPU index: {bad[0]}\n", 6)
    return [g for i, g in enumerate(gpus) if sel is None or i in sel]


def _settings(st: dict[str, Any], argv: list[str], sel: list[int] | None) -> tuple[str, int] | None:
    pm = _opt(argv, "-pm", "--persistence-mode")
    ecc = _opt(argv, "-e", "--ecc-config")
    mig = _opt(argv, "-mig", "--multi-instance-gpu")
    if pm is None and ecc is None and mig is None and not _has(argv, "-r", "--gpu-reset"):
        return None
    out = []
    for g in _targets(st, sel):
        bus = g["bus_id"]
        if pm is not None:
            on = pm in ("1", "ENABLED", "Enabled")
            if g.get("persistence") == on:
                out.append(f"Persistence mode is already {'Enabled' if on else 'Disabled'} for GPU {bus}.")
            else:
                g["persistence"] = on
                out.append(f"{'Enabled' if on else 'Disabled'} Legacy persistence mode for GPU {bus}.")
        if ecc is not None:
            on = ecc in ("1", "ENABLED", "Enabled")
            if g["ecc"]["pending"] == on:
                out.append(f"ECC support is already {'Enabled' if on else 'Disabled'} for GPU {bus}.")
            else:
                g["ecc"]["pending"] = on
                out.append(f"{'Enabled' if on else 'Disabled'} ECC support for GPU {bus}.")
        if mig is not None:
            on = mig in ("1", "ENABLED", "Enabled")
            g["mig"]["pending"] = on
            if on != g["mig"]["current"]:
                word = "enable" if on else "disable"
                out.append(
                    f"Warning: MIG mode is in pending {word} state for GPU {bus}:In use by another client"
                )
                out.append(
                    f"{bus} is currently being used by one or more other processes "
                    "(e.g. CUDA application or a monitoring application such as another instance of "
                    "nvidia-smi). Please first kill all processes using the device and retry the command "
                    "or reboot the system to make MIG mode effective."
                )
            else:
                out.append(f"{'Enabled' if on else 'Disabled'} MIG Mode for GPU {bus}")
        if _has(argv, "-r", "--gpu-reset"):
            reset_gpu(st, g)
            out.append(f"GPU {bus} was successfully reset.")
    out.append("All done.")
    if ecc is not None and any(g["ecc"]["pending"] != g["ecc"]["current"] for g in S.visible_gpus(st)):
        out.append("Reboot required.")
    return "\n".join(out) + "\n", 0


def reset_gpu(st: dict[str, Any], g: dict[str, Any]) -> None:
    """A GPU reset applies pending ECC/MIG modes and performs pending row remaps."""
    g["ecc"]["current"] = g["ecc"]["pending"]
    g["mig"]["current"] = g["mig"]["pending"]
    f = S.fault(st, "row-remap-pending")
    if f is not None and g["index"] in S.targets(st, "row-remap-pending", "gpu", len(st["gpus"])):
        g["remap"]["correctable"] = int(g["remap"].get("correctable", 0)) + 1
        g["aggregate"]["dram_correctable"] = int(g["aggregate"].get("dram_correctable", 0)) + 1
        left = sorted(S.targets(st, "row-remap-pending", "gpu", len(st["gpus"])) - {g["index"]})
        if left:
            f["gpu"] = ",".join(str(i) for i in left)
        else:
            del st["faults"]["row-remap-pending"]
            from . import faults

            faults.sync_flags(st)


def run(st: dict[str, Any], argv: list[str]) -> tuple[str, str, int]:
    """(stdout, stderr, rc) for one invocation; mutates ``st`` for settings."""
    try:
        drv = G.check_driver(st)
    except G.DriverError as e:
        return str(e), "", e.rc
    sel_spec = _opt(argv, "-i", "--id")
    sel = _select(st, sel_spec)
    try:
        if argv[:1] == ["topo"]:
            if _has(argv, "-m", "--matrix", "-mp"):
                return smi_topo.topo(st), "", 0
            return "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n", 2
        if argv[:1] == ["nvlink"]:
            if _has(argv, "-e", "--errorcounters"):
                return smi_topo.nvlink_errors(st, sel), "", 0
            if _has(argv, "-s", "--status"):
                return smi_topo.nvlink_status(st, sel), "", 0
            return "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n", 2
        settings = _settings(st, argv, sel)
        if settings is not None:
            return settings[0], "", settings[1]
        query = _opt(argv, "--query-gpu") or _opt(argv, "--query-remapped-rows")
        if query is not None:
            fmt = _opt(argv, "--format") or ""
            if "csv" not in fmt:
                return "", "Invalid format specified. Please run 'nvidia-smi -h' for help.\n", 2
            text, rc = smi_query.render(
                st,
                drv,
                query.split(","),
                set(fmt.split(",")),
                sel,
                remapped_rows=_opt(argv, "--query-remapped-rows") is not None,
            )
            return (text, "", 0) if rc == 0 else ("", text, rc)
        if _has(argv, "-L", "--list-gpus"):
            return smi_topo.listing(st), "", 0
        if _has(argv, "-q", "--query", "-a"):
            if _has(argv, "-x", "--xml-format"):
                return "", "XML output is not supported by the clusterforge simulator.\n", 2
            d = _opt(argv, "-d", "--display")
            sections = {s.strip().upper() for s in d.split(",")} if d else None
            return smi_q.render(st, drv, sel, sections), "", 0
        if not argv:
            return smi_topo.summary(st, drv), "", 0
    except G.DriverError as e:
        return str(e), "", e.rc
    return (
        "",
        f"Invalid combination of input arguments: {' '.join(argv)}. Please run 'nvidia-smi -h' for help.\n",
        2,
    )


def main(argv: list[str]) -> int:
    hang_if_faulted("nvidia-smi")
    xid79_gone = False
    with S.locked() as st:
        out, err, rc = run(st, argv)
        xid79_gone = bool(S.targets(st, "xid-79", "gpu", len(st["gpus"])))
        if xid79_gone and rc == 0:
            for i in sorted(S.targets(st, "xid-79", "gpu", len(st["gpus"]))):
                g = st["gpus"][i]
                err += f"Unable to determine the device handle for GPU{g['bus_id'][4:]}: Unknown Error\n"
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc
