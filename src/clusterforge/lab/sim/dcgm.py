"""``dcgmi diag -r 1|2|3|4 [-j]`` and ``dcgmi discovery -l`` in the DCGM 4.x layouts; needs nv-hostengine."""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

from . import gpu as G
from . import paths, perf
from . import state as S

HOSTENGINE_PORT = 5555
# level -> [(category, test)]; each level adds to the previous one (DCGM 4.2: nvbandwidth and cpu_eud in r3)
LEVELS = {
    1: [("Deployment", "software")],
    2: [("Hardware", "memory"), ("Integration", "pcie")],
    3: [
        ("Hardware", "diagnostic"),
        ("Integration", "nvbandwidth"),
        ("Stress", "targeted_stress"),
        ("Stress", "targeted_power"),
        ("Stress", "memory_bandwidth"),
    ],
    4: [("Hardware", "pulse_test"), ("Hardware", "memtest")],
}
ORDER = ["Deployment", "Hardware", "Integration", "Stress"]


def hostengine_up() -> bool:
    if not paths.in_node():
        return True
    try:
        with socket.create_connection(("127.0.0.1", HOSTENGINE_PORT), timeout=2):
            return True
    except OSError:
        return False


def evaluate(st: dict[str, Any], level: int) -> list[tuple[str, str, dict[int, str], list[str]]]:
    """[(category, test, {gpu: status}, warnings)] for the visible GPUs."""
    gpus = S.visible_gpus(st)
    nom = perf.gpu_nominal(st["sku"])
    thr = st["sku"]["thresholds"]
    tests = [t for lv in range(1, min(level, 4) + 1) for t in LEVELS[lv]]
    out = []
    for cat, name in tests:
        per: dict[int, str] = {}
        warns: list[str] = []
        for i, g in enumerate(gpus):
            ok = True
            ecc = G.ecc_counts(st, g)["volatile"]
            rr = G.remapped(st, g)
            slow = perf.gpu_factor(st, g["index"])
            if name == "software":
                if not G.persistence(st, g):
                    ok = False
                    warns.append(
                        f"Persistence Mode: Persistence mode for GPU {i} is disabled. Enable persistence "
                        f'mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'
                    )
                if rr["pending"]:
                    ok = False
                    warns.append(
                        f"Page Retirement/Row Remap: GPU {i} had uncorrectable memory errors and row "
                        "remapping is pending. Run nvidia-smi -r to reset the GPU."
                    )
                if G.fabric(st, g)[0] not in ("Completed", "N/A"):
                    ok = False
                    warns.append(
                        f"Fabric Manager: GPU {i}: the fabric manager has not configured the NVLink "
                        "fabric (state In Progress). Start nvidia-fabricmanager."
                    )
            elif name in ("memory", "memtest", "diagnostic") and ecc["dram_uncorrectable"]:
                ok = False
                warns.append(
                    f"GPU {i}: Detected {ecc['dram_uncorrectable']} uncorrectable ECC errors (DBE) in "
                    "GPU memory."
                )
            elif name == "pcie" and nom["h2d"] * slow < thr["h2d_gbs"]["value"]:
                ok = False
                warns.append(
                    f"GPU {i}: Host to GPU bandwidth {nom['h2d'] * slow:.2f} GB/s is below the minimum "
                    f"{thr['h2d_gbs']['value']:.2f} GB/s. Check the PCIe link (width {G.pcie_width(st, g)}x)."
                )
            elif name == "memory_bandwidth" and nom["hbm"] * slow < thr["hbm_bandwidth_gbs"]["value"]:
                ok = False
                warns.append(
                    f"GPU {i}: Memory bandwidth {nom['hbm'] * slow * 1000:.0f} MB/s is below the "
                    f"minimum {thr['hbm_bandwidth_gbs']['value'] * 1000:.0f} MB/s."
                )
            elif name == "nvbandwidth" and nom["d2d"] * slow < thr["d2d_gbs"]["value"]:
                ok = False
                warns.append(f"GPU {i}: device to device bandwidth below the expected minimum.")
            per[i] = "Pass" if ok else "Fail"
        out.append((cat, name, per, warns))
    return out


def _row(left: str, right: str) -> str:
    return f"| {left:<26}| {right:<47}|"


def _wrap(text: str, width: int = 45) -> list[str]:
    return [text[k : k + width] for k in range(0, len(text), width)] or [""]


def _section(name: str, pipe: bool) -> str:
    inner = f"-----  {name}  ".ljust(27, "-")
    return f"|{inner}+{'-' * 48}|" if pipe else f"+{inner}+{'-' * 48}+"


def table(st: dict[str, Any], drv: dict[str, Any], dcgm: str, results: list[Any]) -> str:
    gpus = S.visible_gpus(st)
    ids = ", ".join(S.gpu_device_id(st["sku"]["gpu"]["model"]).lower() for _ in gpus)
    border = f"+{'-' * 27}+{'-' * 48}+"
    out = [
        "Successfully ran diagnostic for group.",
        border,
        _row("Diagnostic", "Result"),
        f"+{'=' * 27}+{'=' * 48}+",
        _section("Metadata", True),
        _row("DCGM Version", dcgm),
        _row("Driver Version Detected", drv["version"]),
        _row("GPU Device IDs Detected", ids),
    ]
    for cat in ORDER:
        tests = [r for r in results if r[0] == cat]
        if not tests:
            continue
        out.append(_section(cat, cat == "Deployment"))
        for _, name, per, warns in tests:
            out.append(_row(name, "Fail" if "Fail" in per.values() else "Pass"))
            for w in warns:
                chunks = _wrap(w)
                out.append(_row("Warning", chunks[0]))
                out += [_row("", c) for c in chunks[1:]]
            out += [_row("", f"GPU{i}: {s}") for i, s in per.items()]
    out.append(border)
    return "\n".join(out) + "\n"


def as_json(st: dict[str, Any], drv: dict[str, Any], dcgm: str, results: list[Any]) -> str:
    cats = []
    for cat in ORDER:
        tests = []
        for c, name, per, warns in results:
            if c != cat:
                continue
            res = []
            for i, s in per.items():
                r: dict[str, Any] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": i, "status": s}
                mine = [w for w in warns if f"GPU {i}" in w]
                if s == "Fail" and mine:
                    r["warnings"] = [
                        {"error_category": 8, "error_id": 29, "error_severity": 5, "warning": w} for w in mine
                    ]
                res.append(r)
            status = "Fail" if "Fail" in per.values() else "Pass"
            tests.append({"name": name, "results": res, "test_summary": {"status": status}})
        if tests:
            cats.append({"category": cat, "tests": tests})
    gpus = S.visible_gpus(st)
    doc = {
        "DCGM Diagnostic": {"test_categories": cats},
        "entity_groups": [
            {
                "entities": [
                    {
                        "device_id": S.gpu_device_id(st["sku"]["gpu"]["model"]).lower(),
                        "entity_id": i,
                        "serial_num": g["serial"],
                    }
                    for i, g in enumerate(gpus)
                ],
                "entity_group": "GPU",
                "entity_group_id": 1,
            }
        ],
        "metadata": {"Driver Version Detected": drv["version"], "version": dcgm},
    }
    return json.dumps(doc, indent="\t", separators=(",", " : ")) + "\n"


def discovery(st: dict[str, Any]) -> str:
    gpus = S.visible_gpus(st)
    border = "+--------+----------------------------------------------------------------------+"
    out = [
        f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} found.",
        border,
        "| GPU ID | Device Information                                                   |",
        border,
    ]
    for i, g in enumerate(gpus):
        out += [
            f"| {i:<7}| {'Name: ' + st['sku']['gpu']['model']:<69}|",
            f"|        | {'PCI Bus ID: ' + g['bus_id']:<69}|",
            f"|        | {'Device UUID: ' + g['uuid']:<69}|",
            border,
        ]
    nsw = 4 if st["sku"]["gpu"]["nvswitch"] else 0
    out += [f"{nsw} NvSwitches found.", "+-----------+", "| Switch ID |", "+-----------+"]
    out += [f"| {i:<10}|" for i in range(nsw)] + (["+-----------+"] if nsw else [])
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    pkg = S.package("datacenter-gpu-manager") or {"version": "4.2.3"}
    if "-v" in argv or "--version" in argv:
        sys.stdout.write(f"dcgmi  version: {pkg['version']}\n")
        return 0
    if not hostengine_up():
        sys.stderr.write(
            "Error: unable to establish a connection to the specified host: localhost\n"
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
        )
        return 255
    st, _run = S.next_run()
    try:
        drv = G.check_driver(st, autoload=False)
    except G.DriverError:
        sys.stderr.write(
            "Error: Unable to complete diagnostic for group 2147483647. Return: (-17) NVML library error.\n"
        )
        return 255
    if argv[:1] == ["discovery"]:
        sys.stdout.write(discovery(st))
        return 0
    if argv[:1] != ["diag"]:
        sys.stderr.write("Usage: dcgmi <subsystem>\n  dcgmi diag -r 1|2|3|4 [-j]\n  dcgmi discovery -l\n")
        return 2
    level = None
    for i, a in enumerate(argv):
        if a in ("-r", "--run") and i + 1 < len(argv):
            level = argv[i + 1]
    names = {"short": 1, "quick": 1, "medium": 2, "long": 3, "xlong": 4}
    lvl = names.get(str(level)) or (int(str(level)) if str(level).isdigit() else 0)
    if lvl not in (1, 2, 3, 4):
        sys.stderr.write(f"Error: Invalid test name or run level: '{level}'\n")
        return 255
    results = evaluate(st, lvl)
    failed = any("Fail" in r[2].values() for r in results)
    sys.stdout.write(
        as_json(st, drv, pkg["version"], results)
        if "-j" in argv or "--json" in argv
        else table(st, drv, pkg["version"], results)
    )
    return 226 if failed else 0
