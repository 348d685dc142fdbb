"""`kubernetes` pool manager: cordon, label and taint nodes through the official Python client.

One strategic-merge patch per action, carrying the node's `resourceVersion` (a concurrent change makes
the API answer 409 and the action is retried on a fresh read):

* drain:  `spec.unschedulable: true`, the taint `clusterforge.io/uncertified=<reason>:NoSchedule`, the
  label `clusterforge.io/certified=false` and the annotation `clusterforge.io/reason` (the full reason);
* resume: `spec.unschedulable: null`, our taint removed, the reason annotation removed;
* admit:  resume, plus labels `clusterforge.io/certified=true`, `clusterforge.io/tier`,
  `clusterforge.io/expectation-digest` (the digest cut to the 63-character label limit).

`spec.taints` has no patch strategy in the Node API (a strategic merge replaces the whole list), so the
patch sends the node's full taint list with ours added or removed; other taints are kept as they were.
A node cordoned without our reason annotation was cordoned by someone else: it is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from clusterforge.pool.base import (
    PREFIX,
    NodeState,
    PoolError,
    PoolManager,
    check_certificate_node,
    check_resume_allowed,
    sanitize_reason,
)

DOMAIN = "clusterforge.io"
LABEL_CERTIFIED = f"{DOMAIN}/certified"
LABEL_TIER = f"{DOMAIN}/tier"
LABEL_DIGEST = f"{DOMAIN}/expectation-digest"
ANNOTATION_REASON = f"{DOMAIN}/reason"
TAINT_KEY = f"{DOMAIN}/uncertified"
TAINT_EFFECT = "NoSchedule"
STRATEGIC = "application/strategic-merge-patch+json"
LABEL_MAX = 63
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value(text: str) -> str:
    """A valid label (or taint) value: [A-Za-z0-9._-], at most 63, alphanumeric at both ends."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:LABEL_MAX]
    value = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)
    if not _LABEL_VALUE.match(value):  # pragma: no cover - the two substitutions make it valid
        raise ValueError(f"not a label value: {value!r}")
    return value


def taint_value(reason: str) -> str:
    """`clusterforge: failed gpu.count,nic.link` → `failed-gpu.count-nic.link` (a label value)."""
    text = reason[len(PREFIX) :] if reason.startswith(PREFIX) else reason
    return label_value(text.strip()) or "uncertified"


def _load_api() -> Any:
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        try:
            config.load_kube_config()
        except (config.ConfigException, OSError) as exc:
            raise PoolError(f"no Kubernetes configuration (in-cluster or kubeconfig): {exc}") from exc
    return client.CoreV1Api()


class KubernetesPool(PoolManager):
    name = "kubernetes"

    def __init__(self, api: Any | None = None, *, retries: int = 3) -> None:
        """`api`: a `kubernetes.client.CoreV1Api`; default from in-cluster config or kubeconfig."""
        self._api = api
        self.retries = retries

    @property
    def api(self) -> Any:
        if self._api is None:
            self._api = _load_api()
        return self._api

    # --- reading ---------------------------------------------------------------------------------
    def _get(self, node: str) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            obj = self.api.read_node(node)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise PoolError(f"reading node {node}: HTTP {exc.status} {exc.reason}") from exc
        data: dict[str, Any] = self.api.api_client.sanitize_for_serialization(obj)
        return data

    @staticmethod
    def _state(node: str, doc: Mapping[str, Any] | None) -> NodeState:
        if doc is None:
            return NodeState(node, "unknown", "no such Node object")
        meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k.startswith(DOMAIN + "/")}
        reason = (meta.get("annotations") or {}).get(ANNOTATION_REASON, "")
        conditions = (doc.get("status") or {}).get("conditions") or []
        ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
        raw = ("Unschedulable," if spec.get("unschedulable") else "") + f"Ready={ready}"
        if spec.get("unschedulable"):
            return NodeState(node, "drained", reason or "cordoned (no clusterforge reason)", labels, raw)
        if ready != "True":
            return NodeState(node, "down", reason, labels, raw)
        return NodeState(node, "idle", reason, labels, raw)

    def status(self, nodes: Iterable[str] | None = None) -> dict[str, NodeState]:
        if nodes is None:
            items = self.api.api_client.sanitize_for_serialization(self.api.list_node()).get("items", [])
            return {d["metadata"]["name"]: self._state(d["metadata"]["name"], d) for d in items}
        return {n: self._state(n, self._get(n)) for n in nodes}

    # --- patches ---------------------------------------------------------------------------------
    @staticmethod
    def _other_taints(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [dict(t) for t in (doc.get("spec") or {}).get("taints") or [] if t.get("key") != TAINT_KEY]

    @classmethod
    def drain_patch(cls, doc: Mapping[str, Any], reason: str) -> dict[str, Any]:
        taint = {"key": TAINT_KEY, "value": taint_value(reason), "effect": TAINT_EFFECT}
        return {
            "metadata": {
                "resourceVersion": doc["metadata"].get("resourceVersion"),
                "labels": {LABEL_CERTIFIED: "false"},
                "annotations": {ANNOTATION_REASON: reason},
            },
            "spec": {"unschedulable": True, "taints": [*cls._other_taints(doc), taint]},
        }

    @classmethod
    def resume_patch(
        cls, doc: Mapping[str, Any], certificate: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "resourceVersion": doc["metadata"].get("resourceVersion"),
            "annotations": {ANNOTATION_REASON: None},
        }
        if certificate is not None:
            meta["labels"] = {
                LABEL_CERTIFIED: "true",
                LABEL_TIER: label_value(str(certificate["tier"])),
                LABEL_DIGEST: label_value(str(certificate["expectation_digest"])),
            }
        return {"metadata": meta, "spec": {"unschedulable": None, "taints": cls._other_taints(doc)}}

    def _patch(self, node: str, build: Any) -> bool:
        """Read, build the patch from the fresh node (None: nothing to do), patch; retry on 409."""
        from kubernetes.client.exceptions import ApiException

        for attempt in range(self.retries):
            doc = self._get(node)
            if doc is None:
                raise PoolError(f"Kubernetes has no node {node}")
            body = build(doc)
            if body is None:
                return False
            try:
                self.api.patch_node(node, body, _content_type=STRATEGIC)
                return True
            except ApiException as exc:
                if exc.status == 409 and attempt + 1 < self.retries:
                    continue
                raise PoolError(f"patching node {node}: HTTP {exc.status} {exc.reason}: {exc.body}") from exc
        return False  # pragma: no cover - the loop returns or raises

    def drain(self, node: str, reason: str, *, force: bool = False) -> bool:
        reason = sanitize_reason(reason)

        def build(doc: Mapping[str, Any]) -> dict[str, Any] | None:
            current = self._state(node, doc)
            if current.state == "drained" and not current.ours and not force:
                return None
            return self.drain_patch(doc, reason)

        return self._patch(node, build)

    def resume(self, node: str, *, force: bool = False) -> bool:
        def build(doc: Mapping[str, Any]) -> dict[str, Any] | None:
            current = self._state(node, doc)
            check_resume_allowed(current, force)
            tainted = any(t.get("key") == TAINT_KEY for t in (doc.get("spec") or {}).get("taints") or [])
            if current.state != "drained" and not tainted and not current.reason:
                return None
            return self.resume_patch(doc)

        return self._patch(node, build)

    def admit(self, node: str, certificate: Mapping[str, Any], *, force: bool = False) -> None:
        check_certificate_node(node, certificate)

        def build(doc: Mapping[str, Any]) -> dict[str, Any]:
            check_resume_allowed(self._state(node, doc), force)
            return self.resume_patch(doc, certificate)

        self._patch(node, build)
