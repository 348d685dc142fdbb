"""Multi-call entry: ``clusterforge-sim TOOL ARGS`` or a symlink/wrapper named as the tool."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

USAGE = "usage: clusterforge-sim TOOL [ARGS...]   (clusterforge-sim tools: list them)\n"


def _tools() -> dict[str, Callable[[list[str]], int]]:
    from . import (
        bench,
        boot,
        daemons,
        dcb,
        dcgm,
        dcgm_exporter,
        ethtool,
        faults,
        grub,
        ibtools,
        klog,
        kmod,
        mlnx,
        nvidia_smi,
        perftest,
        pkghook,
    )

    t: dict[str, Callable[[list[str]], int]] = {
        "nvidia-smi": nvidia_smi.main,
        "dcgmi": dcgm.main,
        "dcgm-exporter": dcgm_exporter.main,
        "nvbandwidth": bench.nvbandwidth,
        "mlnx_qos": mlnx.mlnx_qos,
        "dcb": dcb.main,
        "ethtool": ethtool.main,
        "mlxconfig": mlnx.mlxconfig,
        "mlxfwmanager": mlnx.mlxfwmanager,
        "dmesg": klog.main,
        "modprobe": lambda a: kmod.main(a, "modprobe"),
        "rmmod": lambda a: kmod.main(a, "rmmod"),
        "lsmod": kmod.lsmod,
        "update-grub": lambda a: grub.main(a, "update-grub"),
        "update-grub2": lambda a: grub.main(a, "update-grub"),
        "grub-mkconfig": lambda a: grub.main(a, "grub-mkconfig"),
        "nvidia-persistenced": daemons.persistenced,
        "nv-fabricmanager": daemons.fabricmanager,
        "nv-hostengine": daemons.hostengine,
        "nvidia-modprobe": lambda a: kmod.main(
            ["nvidia", "nvidia_uvm"] if "-u" in a else ["nvidia"], "modprobe"
        ),
        "boot": boot.main,
        "kerneld": daemons.kerneld,
        "configfs-sync": daemons.configfs_sync,
        "fault": faults.main,
        "pkg-sync": pkghook.main,
    }
    for name in ibtools.TOOLS:
        t[name] = functools.partial(ibtools.main, name)
    for name in perftest.TITLES:
        t[name] = functools.partial(perftest.main, name)
    for name in bench.COLLECTIVES:
        t[name] = functools.partial(bench.nccl_test, name)
    return t


def run(argv: list[str]) -> int:
    prog = os.path.basename(argv[0]) if argv else "clusterforge-sim"
    args = argv[1:]
    if prog in ("clusterforge-sim", "__main__.py", "main.py", "-c"):
        if not args:
            sys.stderr.write(USAGE)
            return 2
        prog, args = args[0], args[1:]
    tools = _tools()
    if prog == "tools":
        sys.stdout.write("".join(f"{t}\n" for t in sorted(tools)))
        return 0
    fn = tools.get(prog)
    if fn is None:
        sys.stderr.write(f"clusterforge-sim: unknown tool {prog!r}\n{USAGE}")
        return 127
    try:
        return fn(args)
    except BrokenPipeError:
        return 0
    except FileNotFoundError as e:
        if "state.json" in str(e):
            sys.stderr.write(f"{prog}: no simulated hardware on this node (missing {e.filename})\n")
            return 1
        raise


def main() -> None:
    sys.exit(run(sys.argv))


if __name__ == "__main__":
    main()
