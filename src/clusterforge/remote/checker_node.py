"""The node checker: the validators, run by a node on itself (a Slurm job step on every node), its answer
framed on stdout (`clusterforge.remote.frames`).

Runs ON THE NODE from the checker program (`clusterforge.remote.checker_bundle` builds it; the monitoring
role installs it): ``python3 -I -S clusterforge-checker.pyz``. Standard library plus the pytest and
testinfra the program carries; nothing of the controller, nor of the node's site-packages. The job comes on
stdin as one JSON document, data only::

    {"version": 1, "marker": "quick", "plan": {plan.json, its nodes cut to the step's},
     "knobs": {node: {role knob: value}}, "state": {node: {"files": [..], "packages": [..], ...}}}

``state`` (optional, for `clusterforge drift`): what to read of the node's applied state
(`clusterforge.remote.node_state_probe`), answered as one ``{"kind": "node_state", "state": {..}}`` record
after the validators' — one program reads the node for both.

The node finds itself by ``$SLURMD_NODENAME`` (set by slurmd in every task) or ``--node``; it checks only
itself (testinfra's local backend: no SSH) and answers with the validators' JSON lines, the same records
`clusterforge certify` reads from its SSH runs. A job it cannot run is answered with one
``{"kind": "checker_error"}`` record: never a verdict.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import socket
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from clusterforge.remote.frames import encode

JOB_VERSION = 1
VALIDATORS = "cf_validators/"  # the validators' folder inside the program


def node_name(argv: list[str]) -> str:
    """`--node NAME`, else slurmd's name for this node, else the short host name."""
    if "--node" in argv:
        i = argv.index("--node")
        if i + 1 < len(argv):
            return argv[i + 1]
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _error(message: str) -> bytes:
    return (json.dumps({"kind": "checker_error", "message": message}, sort_keys=True) + "\n").encode()


def _emit(node: str, payload: bytes) -> None:
    out = sys.stdout
    for line in encode(node, payload):
        out.write(line + "\n")
    out.flush()


@contextlib.contextmanager
def _quiet(log: Path) -> Iterator[None]:
    """pytest's own terminal output into `log` (fd level), never onto the step's shared stdout."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("wb") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _job(text: bytes, node: str) -> dict[str, object]:
    """The job document (JSON, gzip'd or not), checked for what this program reads; ValueError naming what
    is wrong."""
    try:
        if text[:2] == b"\x1f\x8b":  # gzip's magic: the Slurm step compresses what it broadcasts
            text = gzip.decompress(text)
        job = json.loads(text)
    except (ValueError, OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"the job on stdin is not JSON: {exc}") from None
    if not isinstance(job, dict) or job.get("version") != JOB_VERSION:
        found = job.get("version") if isinstance(job, dict) else type(job).__name__
        raise ValueError(f"job version {found!r}, this checker reads version {JOB_VERSION}")
    plan = job.get("plan")
    if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), list):
        raise ValueError("the job has no plan with nodes")
    if node not in {str(n.get("name")) for n in plan["nodes"] if isinstance(n, dict)}:
        raise ValueError(f"{node} is not a node of this job's plan (nodes: {len(plan['nodes'])})")
    if not isinstance(job.get("marker"), str) or not isinstance(job.get("knobs"), dict):
        raise ValueError("the job has no marker or no knobs")
    return job


def _state(job: dict[str, object], node: str) -> bytes:
    """The node_state record the job asks of this node ('' when it asks none)."""
    asked = job.get("state")
    query = asked.get(node) if isinstance(asked, dict) else None
    if not isinstance(query, dict):
        return b""
    from clusterforge.remote.node_state_probe import read

    try:
        rec: dict[str, object] = {"kind": "node_state", "state": read(query)}
    except Exception as exc:  # a read that breaks is an answer too: "could not read", never "unchanged"
        rec = {"kind": "node_state", "error": f"{type(exc).__name__}: {exc}"}
    return (json.dumps(rec, sort_keys=True) + "\n").encode()


def check(archive: str, node: str, stdin: bytes) -> bytes:
    """Run the job's validators on this node; the validators' records (or one checker_error)."""
    try:
        job = _job(stdin, node)
    except ValueError as exc:
        return _error(str(exc))
    work = Path(tempfile.mkdtemp(prefix="clusterforge-checker-"))
    try:
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n.startswith(VALIDATORS) and not n.endswith("/")]
            if not names:
                return _error(f"{archive} holds no validators: rebuild it with `clusterforge plan`")
            z.extractall(work, names)
        (work / "plan.json").write_text(json.dumps(job["plan"]), encoding="utf-8")
        (work / "knobs.json").write_text(json.dumps(job["knobs"]), encoding="utf-8")
        results = work / "results.jsonl"
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only the plugins named below
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        sys.dont_write_bytecode = True
        argv = [
            str(work / VALIDATORS), "-m", str(job["marker"]), "--plan", str(work / "plan.json"),
            "--cf-knobs", str(work / "knobs.json"), "--hosts", f"local://{node}",
            "--cf-results", str(results), "-q", "--no-header", "-p", "no:cacheprovider",
            "-p", "testinfra.plugin", "--tb=no", "-rN", "--rootdir", str(work),
        ]  # fmt: skip
        log = work / "pytest.log"
        # from the program; a node whose Python cannot import it (< 3.11 without exceptiongroup and tomli
        # bundled) fails here with a traceback on stderr and no answer: the controller names the node
        import pytest

        with _quiet(log):
            code = pytest.main(argv)
        text = results.read_bytes() if results.exists() else b""
        if int(code) not in (0, 1) and b'"kind": "end"' not in text:
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
            text += _error(f"validators exited {int(code)}: {' | '.join(tail)[:400]}")
        return text + _state(job, node)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(archive: str, argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    node = node_name(argv)
    try:
        stdin = sys.stdin.buffer.read()
    except OSError as exc:
        stdin = b""
        _emit(node, _error(f"cannot read the job from stdin: {exc}"))
        return 2
    _emit(node, check(archive, node, stdin))
    return 0
