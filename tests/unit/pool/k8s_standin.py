"""A local stand-in for the Kubernetes API server (no API server can be installed here).

`http.server` on 127.0.0.1 (random port) serving GET /api/v1/nodes[/{name}] and PATCH /api/v1/nodes/{name}
with strategic-merge or merge patches. It checks every patch body against the Node schema as the official
client's models describe it (`V1Node`, `V1ObjectMeta`, `V1NodeSpec`, `V1Taint`, ...: unknown field → 422),
checks label and taint syntax (422), honours `metadata.resourceVersion` as a precondition (409), refuses
JSON-patch content (415), applies the patch (maps merge, null deletes, lists replace — `spec.taints` has no
patch strategy in the Node API) and records every request.

For the node checker's Jobs (`clusterforge.certify.k8s_jobs`) it also takes namespaced ConfigMaps and
Jobs (POST, checked against `V1ConfigMap` / `V1Job`; DELETE), lists pods by label selector and serves a
pod's log. A Job's pod is "run" by `StandIn.kubelet` (a test's function: pod, ConfigMaps -> phase, log);
without one it stays Pending. The stand-in's kubelet runs no container and enters no namespace: what it
checks is the API conversation and the manifests, not the container's shell line.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import kubernetes.client as kc
import pytest

_LIST = re.compile(r"^(?:list|List)\[(.+)\]$")
_DICT = re.compile(r"^(?:dict\(str, (.+)\)|Dict\[str, (.+)\])$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_SCALARS = {"str": str, "bool": bool, "int": int, "float": float, "datetime": str, "object": object}


def schema_errors(value: Any, type_name: str, path: str) -> list[str]:
    """Problems of `value` against the client's model named `type_name` (None is a delete: allowed)."""
    if value is None:
        return []
    if m := _LIST.match(type_name):
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [e for i, v in enumerate(value) for e in schema_errors(v, m.group(1), f"{path}[{i}]")]
    if m := _DICT.match(type_name):
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        inner = m.group(1) or m.group(2)
        return [e for k, v in value.items() for e in schema_errors(v, inner, f"{path}.{k}")]
    if type_name in _SCALARS:
        ok = isinstance(value, _SCALARS[type_name]) and not (type_name != "bool" and isinstance(value, bool))
        return [] if ok else [f"{path}: expected {type_name}, found {type(value).__name__}"]
    model = getattr(kc, type_name, None)
    if model is None:
        return []  # a type this check does not model (e.g. enums): accepted
    if not isinstance(value, dict):
        return [f"{path}: expected a {type_name} object"]
    fields = {json_name: model.openapi_types[attr] for attr, json_name in model.attribute_map.items()}
    errors = []
    for key, v in value.items():
        if key not in fields:
            errors.append(f"{path}.{key}: unknown field of {type_name}")
        else:
            errors += schema_errors(v, fields[key], f"{path}.{key}")
    return errors


def semantic_errors(patch: dict[str, Any]) -> list[str]:
    errors = []
    meta = patch.get("metadata") or {}
    for k, v in (meta.get("labels") or {}).items():
        if not _LABEL_NAME.match(k):
            errors.append(f"label name {k!r} invalid")
        if v is not None and (len(v) > 63 or not _LABEL_VALUE.match(v)):
            errors.append(f"label {k} value {v!r} invalid (63 characters, alphanumeric ends)")
    for t in (patch.get("spec") or {}).get("taints") or []:
        if not t.get("key") or t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errors.append(f"taint {t} needs a key and a valid effect")
        if len(t.get("value", "")) > 63 or not _LABEL_VALUE.match(t.get("value", "")):
            errors.append(f"taint value {t.get('value')!r} invalid")
    return errors


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            merge(target[k], v)
        else:
            target[k] = copy.deepcopy(v)


def make_node(
    name: str,
    *,
    ready: bool = True,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"podCIDR": "10.42.0.0/24"}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "resourceVersion": "100",
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name},
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


@dataclass
class StandIn:
    url: str
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    conflicts: int = 0  # answer this many PATCHes with 409 (a concurrent writer)
    lock: threading.Lock = field(default_factory=threading.Lock)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    configmaps: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    refuse_jobs_on: set[str] = field(default_factory=set)  # nodeNames whose Job POST is answered 403
    kubelet: Callable[[dict[str, Any], dict[str, dict[str, Any]]], tuple[str, str]] | None = None

    def run_pod(self, name: str) -> None:
        """The kubelet's part, in its own thread: the pod runs, its phase and log are set."""
        if self.kubelet is None:
            return
        with self.lock:
            pod, cms = copy.deepcopy(self.pods[name]), copy.deepcopy(self.configmaps)
        phase, log = self.kubelet(pod, cms)
        with self.lock:
            self.pods[name]["status"] = {"phase": phase}
            self.logs[name] = log

    def api(self) -> Any:
        cfg = kc.Configuration(host=self.url)
        return kc.CoreV1Api(kc.ApiClient(cfg))

    def patches(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "PATCH"]


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, obj: Any) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str) -> None:
            self._send(
                code,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": code,
                },
            )

        def _name(self) -> str | None:
            m = re.match(r"^/api/v1/nodes/([^/?]+)", self.path)
            return m.group(1) if m else None

        def _body(self) -> Any:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                return json.loads(raw)
            except json.JSONDecodeError:
                return None

        def do_POST(self) -> None:
            body = self._body()
            m = re.match(
                r"^/api(?:s/batch)?/v1/namespaces/([^/]+)/(jobs|configmaps)$", self.path.split("?")[0]
            )
            with state.lock:
                state.requests.append({"method": "POST", "path": self.path, "body": body})
                if m is None or not isinstance(body, dict):
                    self._status(404, "NotFound", f"no such collection: {self.path}")
                    return
                kind = m.group(2)
                model = "V1Job" if kind == "jobs" else "V1ConfigMap"
                errors = schema_errors(body, model, kind) + semantic_errors(body)
                name = (body.get("metadata") or {}).get("name", "")
                if not re.match(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", name):
                    errors.append(f"metadata.name {name!r}: not a DNS-1123 label")
                if errors:
                    self._status(422, "Invalid", "; ".join(errors))
                    return
                store = state.jobs if kind == "jobs" else state.configmaps
                if name in store:
                    self._status(409, "AlreadyExists", f'{kind} "{name}" already exists')
                    return
                pod_spec = ((body.get("spec") or {}).get("template") or {}).get("spec") or {}
                if kind == "jobs" and pod_spec.get("nodeName") in state.refuse_jobs_on:
                    self._status(403, "Forbidden", "jobs is forbidden")
                    return
                store[name] = body
                pod_name = ""
                if kind == "jobs":
                    template = body["spec"]["template"]
                    labels = {**(template.get("metadata") or {}).get("labels", {}), "job-name": name}
                    pod_name = f"{name}-x7k2p"
                    state.pods[pod_name] = {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": pod_name, "namespace": m.group(1), "labels": labels},
                        "spec": template["spec"],
                        "status": {"phase": "Pending"},
                    }
                self._send(201, body)
            if pod_name:
                threading.Thread(target=state.run_pod, args=(pod_name,), daemon=True).start()

        def do_DELETE(self) -> None:
            m = re.match(r"^/api(?:s/batch)?/v1/namespaces/([^/]+)/(jobs|configmaps)/([^/?]+)", self.path)
            with state.lock:
                state.requests.append({"method": "DELETE", "path": self.path})
                store = state.jobs if m and m.group(2) == "jobs" else state.configmaps
                if m is None or m.group(3) not in store:
                    self._status(404, "NotFound", f"not found: {self.path}")
                    return
                del store[m.group(3)]
                if m.group(2) == "jobs":
                    for pod in [
                        p
                        for p, d in state.pods.items()
                        if d["metadata"]["labels"].get("job-name") == m.group(3)
                    ]:
                        state.pods.pop(pod)
                self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

        def _text(self, text: str) -> None:
            data = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            with state.lock:
                state.requests.append({"method": "GET", "path": self.path})
                path, _, query = self.path.partition("?")
                if m := re.match(r"^/api/v1/namespaces/[^/]+/pods/([^/]+)/log$", path):
                    if m.group(1) not in state.pods:
                        self._status(404, "NotFound", f'pods "{m.group(1)}" not found')
                    else:
                        self._text(state.logs.get(m.group(1), ""))
                    return
                if re.match(r"^/api/v1/namespaces/[^/]+/pods$", path):
                    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
                    want = urllib.parse.unquote(params.get("labelSelector", ""))
                    key, _, value = want.partition("=")
                    items = [
                        p for p in state.pods.values() if not key or p["metadata"]["labels"].get(key) == value
                    ]
                    self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
                    return
                if self.path.split("?")[0] == "/api/v1/nodes":
                    items = list(state.nodes.values())
                    self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items})
                    return
                name = self._name()
                if name not in state.nodes:
                    self._status(404, "NotFound", f'nodes "{name}" not found')
                    return
                self._send(200, state.nodes[name])

        def do_PATCH(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            ctype = self.headers.get("Content-Type", "")
            with state.lock:
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = None
                state.requests.append(
                    {"method": "PATCH", "path": self.path, "content_type": ctype, "body": body}
                )
                name = self._name()
                if ctype not in ("application/strategic-merge-patch+json", "application/merge-patch+json"):
                    self._status(
                        415, "UnsupportedMediaType", f"this stand-in takes merge patches, not {ctype}"
                    )
                    return
                if not isinstance(body, dict):
                    self._status(400, "BadRequest", "patch body is not a JSON object")
                    return
                errors = schema_errors(body, "V1Node", "node") + semantic_errors(body)
                if errors:
                    self._status(422, "Invalid", "; ".join(errors))
                    return
                if name not in state.nodes:
                    self._status(404, "NotFound", f'nodes "{name}" not found')
                    return
                node = state.nodes[name]
                want = (body.get("metadata") or {}).get("resourceVersion")
                if state.conflicts or (want is not None and want != node["metadata"]["resourceVersion"]):
                    state.conflicts = max(state.conflicts - 1, 0)
                    node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
                    self._status(
                        409,
                        "Conflict",
                        "the object has been modified; please apply your changes "
                        "to the latest version and try again",
                    )
                    return
                patch = copy.deepcopy(body)
                patch.get("metadata", {}).pop("resourceVersion", None)
                merge(node, patch)
                node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
                self._send(200, node)

    return Handler


@pytest.fixture
def k8s() -> Iterator[StandIn]:
    state = StandIn(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
