"""Small daemons behind the simulated services.

* ``nvidia-persistenced`` (nvidia-persistenced.service, Type=forking): persistence mode on while it runs.
* ``nv-fabricmanager`` (nvidia-fabricmanager.service, Type=forking): version-locked to the loaded driver;
  moves every GPU's fabric state to Completed/Success.
* ``nv-hostengine`` (nvidia-dcgm.service): listens on 127.0.0.1:5555 like DCGM's host engine.
* ``clusterforge-sim kerneld`` (clusterforge-sim-kernel.service): configfs mkdir semantics for rdma_cm,
  GID tables following the rails' addresses, fault side effects (a ``link-errors`` counter rising every
  tick), /proc/meminfo hugepage lines.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from . import boot, faults, gpu, linkerr, paths, sysfs
from . import state as S

FAULT_EXIT = 1


def _faulted(service: str) -> bool:
    st = S.load()
    f = S.fault(st, "service-stopped")
    return f is not None and service in str(f.get("service", "")).split(",")


def _daemonize(pidfile: str) -> None:
    """Fork into the background as a Type=forking unit expects (pidfile written before the parent exits)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid > 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    os.setsid()
    paths.write(pidfile, f"{os.getpid()}\n")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.write(w, b"x")
    os.close(w)


def _wait_for_term(on_exit: Any = None) -> int:
    stop = {"now": False}

    def handler(signum: int, _frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    while not stop["now"]:
        time.sleep(0.5)
    if on_exit:
        on_exit()
    return 0


def persistenced(argv: list[str]) -> int:
    if _faulted("persistenced"):
        sys.stderr.write("nvidia-persistenced failed to initialize. Check syslog for more details.\n")
        return FAULT_EXIT
    mode = "--no-persistence-mode" not in argv
    with S.locked() as st:
        try:
            gpu.check_driver(st)
        except gpu.DriverError:
            sys.stderr.write("nvidia-persistenced failed to initialize. Check syslog for more details.\n")
            return 1
        for g in st["gpus"]:
            g["persistence"] = mode
    pidfile = "/var/run/nvidia-persistenced/nvidia-persistenced.pid"
    if "--foreground" not in argv and "-f" not in argv:
        _daemonize(pidfile)

    def off() -> None:
        with S.locked() as st2:
            for g in st2["gpus"]:
                g["persistence"] = False
        paths.p(pidfile).unlink(missing_ok=True)

    return _wait_for_term(off)


def fabricmanager(argv: list[str]) -> int:
    log = "/var/log/fabricmanager.log"

    def say(msg: str) -> None:
        with open(paths.p(log), "a") as f:
            f.write(f"[{time.strftime('%b %d %Y %H:%M:%S')}] [INFO] [tid {os.getpid()}] {msg}\n")

    paths.p(log).parent.mkdir(parents=True, exist_ok=True)
    if _faulted("fabricmanager"):
        say("fabric manager failed to start (simulated service-stopped fault)")
        return FAULT_EXIT
    fm = S.package("nvidia-fabricmanager") or {}
    with S.locked() as st:
        try:
            drv = gpu.check_driver(st, autoload=False)
        except gpu.DriverError:
            sys.stderr.write("NVIDIA GPU driver is not loaded\n")
            say("request to query NVSwitch device information from NVSwitch driver failed")
            return 1
        loaded = S.modules_loaded(st)["nvidia"].get("version", drv["version"])
        if fm.get("version") and fm["version"] != loaded:
            msg = (
                f"fabric manager NVIDIA GPU driver interface version {fm['version']} don't match with driver "
                f"version {loaded}. Please update with matching NVIDIA driver package."
            )
            sys.stderr.write(msg + "\n")
            say(msg)
            return 1
        if not st["sku"]["gpu"]["nvswitch"]:
            sys.stderr.write("NV_WARN_NOTHING_TO_DO: no NVSwitch devices found\n")
            say("No NVSwitch devices found, fabric manager exiting")
            return 1
        for g in st["gpus"]:
            g["fabric"] = "Completed"
    say(
        f"Fabric Manager version {fm.get('version', '?')} is running with the following configuration options"
    )
    say(
        "Successfully configured all the available NVSwitches to route GPU NVLink traffic. "
        "NVLink Peer-to-Peer "
        "support will be enabled once the GPUs are successfully registered with the NVLink fabric."
    )
    pidfile = "/var/run/nvidia-fabricmanager/nv-fabricmanager.pid"
    _daemonize(pidfile)
    return _wait_for_term(lambda: paths.p(pidfile).unlink(missing_ok=True))


def hostengine(argv: list[str]) -> int:
    if "--term" in argv:
        return 0
    if _faulted("dcgm"):
        sys.stderr.write("Err: Failed to start DCGM Server: -7\n")
        return FAULT_EXIT
    port = 5555
    for i, a in enumerate(argv):
        if a in ("-p", "--port") and i + 1 < len(argv):
            port = int(argv[i + 1])
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(16)
    if "-n" not in argv and "--no-daemon" not in argv:
        _daemonize("/var/run/nvhostengine.pid")
    sys.stdout.write("Started host engine version 4 using port number: 5555\n")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        conn, _ = srv.accept()
        conn.close()


# ---- kerneld --------------------------------------------------------------------------------------------


def _hugepage_sync(st: dict[str, Any], last: dict[str, str]) -> None:
    """vm.nr_hugepages <-> the default-size sysfs pool, and the meminfo hugepage lines."""
    key = "vm.nr_hugepages"
    src = paths.p(f"{boot.PROC}/sys/{key}")
    pool = paths.p("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
    if src.exists() and pool.exists():
        v = src.read_text().strip()
        if last.get(key) not in (None, v):
            boot.write_in_place(str(pool).removeprefix(str(paths.root())), v + "\n")
        else:
            pv = pool.read_text().strip()
            if pv != v:
                boot.write_in_place(f"{boot.PROC}/sys/{key}", pv + "\n")
                v = pv
        last[key] = v
    boot.write_in_place(f"{boot.PROC}/meminfo", boot.meminfo(st, boot.real_proc("meminfo")))


IN_MODIFY, IN_CLOSE_WRITE, IN_CREATE = 0x2, 0x8, 0x100


def _watch() -> None:
    """React within a millisecond (inotify) where the kernel reacts at once: THP read-back, configfs mkdir."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(0)
        if fd < 0:
            return
        for d, mask in (
            (b"/sys/kernel/mm/transparent_hugepage", IN_CLOSE_WRITE | IN_MODIFY),
            (b"/sys/kernel/config/rdma_cm", IN_CREATE),
        ):
            libc.inotify_add_watch(fd, d, mask)
    except (OSError, AttributeError):
        return
    while True:
        try:
            os.read(fd, 4096)
            sysfs.normalize_thp()
            sysfs.populate_rdma_cm(S.load())
        except (OSError, ValueError, KeyError):
            time.sleep(0.2)


def kerneld(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if paths.in_node():
        threading.Thread(target=_watch, daemon=True).start()
    last: dict[str, str] = {}
    tick = 0
    while True:
        try:
            st = S.load()
            sysfs.populate_rdma_cm(st)
            sysfs.normalize_thp()
            if linkerr.KIND in st.get("faults", {}):  # its counter rises between the 2 s refreshes too
                with S.held() as cur:
                    linkerr.refresh(cur)
            if tick % 10 == 0:
                with S.held() as cur:  # a fault set or cleared meanwhile is not undone from a stale copy
                    sysfs.refresh_ports(cur)
                    sysfs.render_ecn(cur)  # rails that appeared after boot
                    if cur.get("faults"):
                        faults.enforce(cur)
            if tick % 25 == 0:
                _hugepage_sync(st, last)
        except (OSError, ValueError, KeyError) as e:
            sys.stderr.write(f"kerneld: {e}\n")
        tick += 1
        time.sleep(0.2)
        if "--once" in argv:
            return 0


def configfs_sync(argv: list[str]) -> int:
    """Called by the mkdir shim right after a mkdir under /sys/kernel/config/rdma_cm."""
    sysfs.populate_rdma_cm(S.load())
    return 0
