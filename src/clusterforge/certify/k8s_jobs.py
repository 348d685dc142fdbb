"""Certification as one Kubernetes Job per node: each node runs the node checker on itself, the controller
reads every pod's log and judges the answers exactly as it judges its SSH runs and Slurm steps.

Per node, one ConfigMap (the job document: the plan cut to the node, its role knobs, what to read of its
applied state — data) and one Job pinned to the node by `nodeName` (no scheduler: cordoned and tainted
nodes run it too, as `srun -Z` does; every taint tolerated). The pod shares the host's PID and network
namespaces and enters the host's mount, UTS and IPC namespaces of PID 1 with `nsenter`, so the checker
the monitoring role installed runs against the node itself, not the container: the container needs only
`sh` and `nsenter` (Debian's slim image has both: util-linux is Essential). The shell line is constant;
the checker's path and the node's name reach it as positional arguments, never as script text. The answer
is the pod's log, framed (`clusterforge.remote.frames`); Jobs and ConfigMaps are deleted afterwards.

A node whose pod does not finish, fails without an answer or cannot be created gets one `k8s.job` error,
never a verdict. The BMC checks run on the controller, as with Slurm.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from clusterforge.certify.node_job import (
    Names,
    StepAnswer,
    checker_path,
    controller_checks,
    job_document,
    read_answer,
    step_error,
)
from clusterforge.certify.plugin import BMC
from clusterforge.remote.frames import decode

CHECK = "k8s.job"
VIA = "a Kubernetes Job"
FIX = (
    "install the node checker (clusterforge provision --tags checker, role monitoring), check that the "
    "node's kubelet runs pods (`kubectl get pods -n {ns} -o wide`), or certify this node over SSH (--via ssh)"
)
NAMESPACE = "clusterforge"
IMAGE = "debian:bookworm-slim"  # sh and nsenter; a site points this at its own registry's copy
JOB_MOUNT = "/clusterforge"
SCRIPT = (
    'exec nsenter --target 1 --mount --uts --ipc -- python3 -I -S "$0" --node "$1" < '
    + JOB_MOUNT
    + "/job.json"
)
LABEL_RUN = "clusterforge.io/run"
LABEL_NODE = "clusterforge.io/node"
_DNS = re.compile(r"[^a-z0-9-]+")


def object_name(run_id: str, node: str) -> str:
    """A DNS-1123 label for the node's Job and ConfigMap (63 characters; a digest keeps cut names apart)."""
    base = _DNS.sub("-", f"cf-check-{run_id[:8]}-{node}".lower()).strip("-")
    if len(base) <= 63:
        return base
    tail = hashlib.sha256(node.encode()).hexdigest()[:8]
    return f"{base[:54].rstrip('-')}-{tail}"


def label(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value) or "x"


def manifests(
    node: str, checker: str, run_id: str, job: bytes, deadline_s: float, *, namespace: str, image: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ConfigMap, Job) for one node."""
    name = object_name(run_id, node)
    labels = {
        "app.kubernetes.io/name": "clusterforge-checker",
        LABEL_RUN: label(run_id),
        LABEL_NODE: label(node),
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"job.json": job.decode()},
    }
    pod = {
        "nodeName": node,
        "restartPolicy": "Never",
        "hostPID": True,
        "hostNetwork": True,
        "automountServiceAccountToken": False,
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "checker",
                "image": image,
                "command": ["/bin/sh", "-c", SCRIPT, checker, node],
                "securityContext": {"privileged": True},
                "volumeMounts": [{"name": "job", "mountPath": JOB_MOUNT, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "job", "configMap": {"name": name}}],
    }
    job_obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": int(deadline_s),
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    return config_map, job_obj


def run_jobs(
    api_client: Any,
    plan_doc: dict[str, Any],
    inventory: Path,
    nodes: list[str],
    marker: str,
    workdir: Path,
    deadline_s: float,
    run_id: str,
    *,
    states: Mapping[str, Names] | None = None,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    namespace: str = NAMESPACE,
    image: str = IMAGE,
    poll_s: float = 1.0,
) -> StepAnswer:
    """One Job per node of `nodes` through `api_client` (a `kubernetes.client.ApiClient`)."""
    from kubernetes import client

    # bodies go as plain manifests (dicts; the client serializes them as given)
    core: Any = client.CoreV1Api(api_client)
    batch: Any = client.BatchV1Api(api_client)
    answer = StepAnswer()
    if not nodes:
        return answer
    workdir.mkdir(parents=True, exist_ok=True)
    fix = FIX.replace("{ns}", namespace)
    by_name = {n["name"]: n for n in plan_doc["nodes"]}
    created: list[str] = []
    pending: dict[str, str] = {}  # node -> its objects' name
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="certify-bmc") as ex:
            here = ex.submit(
                controller_checks, inventory, list(nodes), marker, workdir, deadline_s, env, cancel
            )
            for node in nodes:
                try:
                    checker = checker_path(by_name[node])
                    job = job_document(plan_doc, inventory, [node], f"({marker}) and not {BMC}", states)
                    cm, jb = manifests(
                        node, checker, run_id, job, deadline_s, namespace=namespace, image=image
                    )
                    core.create_namespaced_config_map(namespace, cm)
                    created.append(cm["metadata"]["name"])
                    batch.create_namespaced_job(namespace, jb)
                    pending[node] = jb["metadata"]["name"]
                except Exception as exc:  # an API refusal is this node's error, not the run's end
                    _no_answer(answer, node, f"not started: {_why(exc)}", states, fix)
                    answer.unanswered.add(node)
            logs = _wait(core, namespace, run_id, pending, deadline_s, cancel, poll_s)
            bmc, bmc_notes = here.result()
    finally:
        for name in created:
            _delete(core, batch, namespace, name)
    for node in pending:
        phase, text = logs.get(node, ("Pending", ""))
        got, broken = decode(text.splitlines())
        if node in got:
            res, state, state_error = read_answer(workdir / f"{node}.jsonl", node, got[node], CHECK, fix)
            answer.file(node, res, state, state_error, bool(states and node in states))
        else:
            why = broken.get(node) or f"pod {phase} without an answer"
            _no_answer(answer, node, why, states, fix)
            if node not in broken and not (cancel and cancel.is_set()):
                answer.unanswered.add(node)
    for node, res in answer.results.items():
        res.checks += bmc.get(node, [])
        if node in bmc_notes:
            res.complete, res.note = False, f"incomplete: {bmc_notes[node]}"
    answer.results = {n: answer.results[n] for n in nodes if n in answer.results}
    return answer


def _no_answer(answer: StepAnswer, node: str, why: str, states: Mapping[str, Names] | None, fix: str) -> None:
    answer.results[node] = step_error(node, why, CHECK, VIA, fix)
    if states and node in states:
        answer.state_errors[node] = f"not answered by {VIA}: {why}"


def _why(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    return f"HTTP {status} {reason}" if status else f"{type(exc).__name__}: {exc}"


def _wait(
    core: Any,
    namespace: str,
    run_id: str,
    pending: Mapping[str, str],
    deadline_s: float,
    cancel: threading.Event | None,
    poll_s: float,
) -> dict[str, tuple[str, str]]:
    """Until every node's pod finished (or the deadline): node -> (pod phase, its log)."""
    out: dict[str, tuple[str, str]] = {}
    end = time.monotonic() + deadline_s
    selector = f"{LABEL_RUN}={label(run_id)}"
    wanted = {label(n): n for n in pending}
    while len(out) < len(pending) and time.monotonic() < end and not (cancel and cancel.is_set()):
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        for pod in pods:
            node = wanted.get((pod.metadata.labels or {}).get(LABEL_NODE, ""))
            phase = pod.status.phase if pod.status else "Pending"
            if node is None or node in out or phase not in ("Succeeded", "Failed"):
                continue
            try:
                text = core.read_namespaced_pod_log(pod.metadata.name, namespace, container="checker")
            except Exception as exc:  # no log is no answer: the node gets its error below
                text = ""
                phase = f"{phase} (log unreadable: {_why(exc)})"
            out[node] = (phase, text or "")
        if len(out) < len(pending):
            time.sleep(poll_s)
    for node in pending:
        out.setdefault(node, ("not finished", ""))
    return out


def _delete(core: Any, batch: Any, namespace: str, name: str) -> None:
    for call in (
        lambda: batch.delete_namespaced_job(name, namespace, propagation_policy="Background"),
        lambda: core.delete_namespaced_config_map(name, namespace),
    ):
        # already gone, or the API went away: ttlSecondsAfterFinished removes the Job
        with contextlib.suppress(Exception):
            call()
