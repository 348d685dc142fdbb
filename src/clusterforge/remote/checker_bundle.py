"""Build the node checker program: one zip file (a Python zipapp) that a node runs with its own `python3`.
The same program is the node's passive health check (run by that name: `HEALTH_NAME`).

It carries the validators, the clusterforge modules they import, and the pure-Python packages they run on
(pytest and its dependencies, testinfra) copied from this controller's environment, so a node needs
nothing from a package index. The build is deterministic (sorted entries, fixed timestamps and modes): the
same sources give the same bytes, so installing it again changes nothing and its digest names its content.
The BIOS validator is left out: it talks Redfish to BMCs from the controller, and the BMC account never
goes to a node.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import clusterforge
from clusterforge import assets

FILE_NAME = "clusterforge-checker.pyz"
#: where `clusterforge plan` (and `inventory from-stack`) put it in the inventory folder; the generated
#: group_vars point the monitoring role there (`monitoring_checker_bundle`)
INVENTORY_FILE = f"files/{FILE_NAME}"
#: the distributions the validators run on (pytest 8.4 imports pygments at start-up; the Xid policy is YAML:
#: PyYAML's pure-Python loader, as a zip cannot load its C extension, which is left out). Python < 3.11 nodes
#: (Ubuntu 22.04, RHEL 9) also need exceptiongroup and tomli: bundled when the controller has them
#: (`OPTIONAL`). The node runs the program with `python3 -I -S`: nothing of the node's own site-packages is
#: read, so what the program lacks fails on every node alike, never only on some.
DISTRIBUTIONS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments", "pytest-testinfra", "PyYAML")
OPTIONAL = ("exceptiongroup", "tomli")
CONTROLLER_ONLY_VALIDATORS = ("test_bios.py",)
_SKIP_PARTS = ("__pycache__",)
_STAMP = (1980, 1, 1, 0, 0, 0)

#: the passive health check's name: the monitoring role links the health check's path to this program, and
#: run by that name (Slurm's HealthCheckProgram, which passes no arguments) or as `PROGRAM health ...` it is
#: the health check (`clusterforge.health.nodecheck`: standard library only, nothing of pytest is loaded)
HEALTH_NAME = "clusterforge-healthcheck"
#: the first line: executable as is (the health check's link), with the node's own python3, isolated (-I)
#: and without site-packages (-S), as `srun`/the Job run it
SHEBANG = b"#!/usr/bin/python3 -IS\n"
MAIN = f"""\
import os, sys
if os.path.basename(sys.argv[0]) == {HEALTH_NAME!r} or sys.argv[1:2] == ["health"]:
    from clusterforge.health.nodecheck import main as health
    sys.exit(health(sys.argv[2:] if sys.argv[1:2] == ["health"] else sys.argv[1:]))
from clusterforge.remote.checker_node import main
sys.exit(main(os.path.dirname(os.path.abspath(__file__))))
"""


def _keep(rel: str) -> bool:
    parts = rel.split("/")
    return not any(p in _SKIP_PARTS for p in parts) and not rel.endswith((".pyc", ".pyo", ".so", ".pyd"))


def _distribution_files(name: str) -> Iterator[tuple[str, Path]]:
    dist = md.distribution(name)
    for f in dist.files or ():
        rel = str(f).replace("\\", "/")
        if rel.startswith("..") or "/bin/" in f"/{rel}" or not _keep(rel):
            continue  # console scripts live outside site-packages
        if rel.endswith("/RECORD") or rel.endswith("/INSTALLER") or rel.endswith("/REQUESTED"):
            continue
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            yield rel, path


def entries() -> dict[str, Path]:
    """Archive name -> source file, everything the program carries (but its __main__)."""
    out: dict[str, Path] = {}
    for name in DISTRIBUTIONS:
        out.update(dict(_distribution_files(name)))
    for name in OPTIONAL:
        with contextlib.suppress(md.PackageNotFoundError):
            out.update(dict(_distribution_files(name)))
    pkg = Path(clusterforge.__file__).parent
    for path in sorted(pkg.rglob("*")):
        rel = path.relative_to(pkg).as_posix()
        if path.is_file() and _keep(rel) and not rel.startswith("_assets/"):
            out[f"clusterforge/{rel}"] = path
    validators = assets.validators()
    for path in sorted(validators.rglob("*")):
        rel = path.relative_to(validators).as_posix()
        if path.is_file() and _keep(rel) and rel not in CONTROLLER_ONLY_VALIDATORS:
            out[f"cf_validators/{rel}"] = path
    return out


def build() -> bytes:
    """The program's bytes (deterministic)."""
    buf = io.BytesIO(SHEBANG)
    buf.seek(0, io.SEEK_END)
    files = entries()
    with zipfile.ZipFile(buf, "w") as z:
        for name in ["__main__.py", *sorted(files)]:
            info = zipfile.ZipInfo(name, date_time=_STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            data = MAIN.encode() if name == "__main__.py" else files[name].read_bytes()
            z.writestr(info, data, compresslevel=9)
    return buf.getvalue()


def write(folder: Path) -> Path:
    """The program in `folder` (written only when its bytes changed); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE_NAME
    data = build()
    if not path.is_file() or hashlib.sha256(path.read_bytes()).digest() != hashlib.sha256(data).digest():
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path
