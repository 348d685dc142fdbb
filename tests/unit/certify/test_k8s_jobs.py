"""Certification as one Kubernetes Job per node, against the local API stand-in (tests/unit/pool/
k8s_standin.py: manifests checked against the client's V1Job / V1ConfigMap models), its kubelet running
the real node checker program with `/usr/bin/python3 -I -S` as the pod's command would on the node."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes.client as kc
import pytest

from clusterforge.certify.k8s_jobs import CHECK, SCRIPT, manifests, object_name, run_jobs
from tests.unit.certify.test_slurm_step import NODE_PYTHON, _setup
from tests.unit.pool.k8s_standin import StandIn
from tests.unit.pool.k8s_standin import k8s as k8s


def kubelet(pod: dict[str, Any], configmaps: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """The pod's command, run here: sh -c SCRIPT CHECKER NODE with the ConfigMap's job on stdin."""
    container = pod["spec"]["containers"][0]
    assert container["command"][:3] == ["/bin/sh", "-c", SCRIPT]
    checker, node = container["command"][3:5]
    job = configmaps[pod["spec"]["volumes"][0]["configMap"]["name"]]["data"]["job.json"]
    p = subprocess.run(
        [NODE_PYTHON, "-I", "-S", checker, "--node", node],
        input=job.encode(),
        capture_output=True,
        check=False,
    )
    return ("Succeeded" if p.returncode == 0 else "Failed"), p.stdout.decode()


def api(k8s: StandIn) -> Any:
    return kc.ApiClient(kc.Configuration(host=k8s.url))


def test_one_job_per_node_answers_as_the_ssh_runs_and_leaves_nothing_behind(
    k8s: StandIn, tmp_path: Path
) -> None:
    doc, inv, _ = _setup(tmp_path)
    a, b, c = (n["name"] for n in doc["nodes"][:3])
    k8s.kubelet = kubelet
    k8s.refuse_jobs_on = {c}
    mine = tmp_path / "f.conf"
    mine.write_text("y\n")
    names = {"files": [str(mine)], "packages": [], "services": [], "modules": []}
    answer = run_jobs(
        api(k8s), doc, inv, [a, b, c], "quick", tmp_path / "w", 300, "run-1234abcd",
        states={a: names}, poll_s=0.1,
    )  # fmt: skip
    assert list(answer.results) == [a, b, c]
    for node in (a, b):
        r = answer.results[node]
        assert r.complete and r.collected > 50 and {x.node for x in r.checks} == {node}, r.note
    assert answer.states[a]["files"][str(mine)]["mode"] == f"{mine.stat().st_mode & 0o777:04o}"
    refused = answer.results[c]
    assert refused.verdict == "error" and [x.check_id for x in refused.checks] == [CHECK]
    assert "HTTP 403" in refused.checks[0].message
    assert k8s.jobs == {} and k8s.configmaps == {}  # deleted after the run
    posted = [r for r in k8s.requests if r["method"] == "POST" and r["path"].endswith("/jobs")]
    assert len(posted) == 3


def test_a_pod_that_never_finishes_is_an_error_at_the_deadline(k8s: StandIn, tmp_path: Path) -> None:
    doc, inv, _ = _setup(tmp_path)
    node = doc["nodes"][0]["name"]
    k8s.kubelet = lambda pod, cms: ("Running", "")
    answer = run_jobs(api(k8s), doc, inv, [node], "quick", tmp_path / "w", 2, "run-x", poll_s=0.1)
    res = answer.results[node]
    assert res.verdict == "error" and res.checks[0].check_id == CHECK
    assert "not finished" in res.checks[0].message and k8s.jobs == {}
    assert answer.unanswered == {node}  # nothing came back: the flows read it over SSH instead


def test_the_job_runs_on_its_node_in_the_hosts_namespaces_with_values_as_arguments() -> None:
    job = b'{"version": 1}'
    cm, jb = manifests("gpu-0001", "/usr/local/lib/c.pyz", "abcd", job, 900, namespace="ns", image="img")
    spec = jb["spec"]["template"]["spec"]
    assert spec["nodeName"] == "gpu-0001" and spec["hostPID"] and spec["hostNetwork"]
    assert spec["tolerations"] == [{"operator": "Exists"}]  # cordoned, tainted: checked all the same
    assert spec["automountServiceAccountToken"] is False
    (container,) = spec["containers"]
    assert container["command"] == ["/bin/sh", "-c", SCRIPT, "/usr/local/lib/c.pyz", "gpu-0001"]
    assert "gpu-0001" not in SCRIPT and "env" not in container  # no value in the script, no variable
    assert json.loads(cm["data"]["job.json"]) == {"version": 1}
    assert jb["spec"]["backoffLimit"] == 0 and jb["spec"]["activeDeadlineSeconds"] == 900


@pytest.mark.parametrize("node", ["gpu-0001", "GPU_0001.rack7", "n" * 80])
def test_object_names_are_dns_labels(node: str) -> None:
    name = object_name("9b3143ba-f657", node)
    assert len(name) <= 63 and name == name.lower() and name[0].isalnum() and name[-1].isalnum()
    assert object_name("9b3143ba-f657", node + "x") != name


def test_the_flows_reach_the_jobs_through_the_kubernetes_pool_managers_client(
    k8s: StandIn, tmp_path: Path
) -> None:
    from clusterforge.flows.node_side import node_side
    from clusterforge.pool.kubernetes import KubernetesPool

    doc, inv, _ = _setup(tmp_path)
    node = doc["nodes"][0]["name"]
    k8s.kubelet = kubelet
    answer = node_side(KubernetesPool(api=k8s.api()), doc, inv, [node], tmp_path / "w", run_id="r1")
    assert answer.results[node].complete and answer.results[node].collected > 50
