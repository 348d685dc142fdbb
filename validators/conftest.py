"""Validators' fixtures: the plan's expectations per node, one testinfra host (one SSH session) per node.

Run by `clusterforge certify` (one pytest process per node), or by hand::

    pytest validators -m quick --plan inventory/generated/lab/plan.json \\
        --hosts ssh://root@10.244.0.11 --ssh-config run/ssh_config

``--plan`` (or ``$CLUSTERFORGE_PLAN``) names plan.json; the role knobs come from ``group_vars/`` beside it.
``--hosts`` are matched to plan nodes by address or name; without ``--hosts`` every plan node is
targeted at its management address. ``--pool`` / ``--sku`` narrow the nodes. Tests are parametrized by
node (``cf_node``) and, where they take ``rail``, by rail; a check only applies to nodes that its
``applies`` marker accepts (e.g. RoCE-only checks).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import testinfra

from clusterforge.certify.checks import PREFETCH, Probe
from clusterforge.plan.expect import NodeExpect, nodes_of, read_plan_json

pytest_plugins = ["clusterforge.certify.plugin"]

_PROBES: dict[str, Probe] = {}
_HOSTS: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("clusterforge", "clusterforge certification")
    group.addoption(
        "--plan",
        dest="cf_plan",
        default=os.environ.get("CLUSTERFORGE_PLAN"),
        help="plan.json of the cluster (default $CLUSTERFORGE_PLAN)",
    )
    group.addoption("--pool", dest="cf_pool", default=None, help="only nodes of these pools (comma list)")
    group.addoption(
        "--cf-no-batch",
        dest="cf_no_batch",
        action="store_true",
        default=os.environ.get("CLUSTERFORGE_VALIDATORS_NO_BATCH") == "1",
        help="no batched prefetch and no output shared between checks: every check runs its own commands "
        "(to isolate one check's commands; the naive baseline of bench/run.py) "
        "[default: $CLUSTERFORGE_VALIDATORS_NO_BATCH=1]",
    )
    group.addoption("--sku", dest="cf_sku", default=None, help="only nodes of these SKUs (comma list)")
    group.addoption(
        "--cf-knobs",
        dest="cf_knobs",
        default=None,
        help="JSON file of each node's role knobs (node -> knobs), read instead of group_vars/ beside the "
        "plan (the node checker's job carries them)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "applies(predicate): the check applies to nodes where predicate(node)")


def _host_of(spec: str) -> str:
    """The address or name in a testinfra host spec (``ssh://root@10.0.0.1:22`` → ``10.0.0.1``)."""
    netloc = urllib.parse.urlparse(spec).netloc if "://" in spec else spec
    return netloc.rpartition("@")[2].split(":")[0]


def _targets(config: pytest.Config) -> dict[str, tuple[NodeExpect, str]]:
    """node name → (expectations, testinfra host spec), computed once per session."""
    cached: dict[str, tuple[NodeExpect, str]] | None = getattr(config, "_cf_targets", None)
    if cached is not None:
        return cached
    plan_path = config.getoption("cf_plan")
    if not plan_path:
        raise pytest.UsageError("validators need the plan: pass --plan PATH or set CLUSTERFORGE_PLAN")
    doc = read_plan_json(plan_path)
    by_addr = {n["mgmt_ip"]: n["name"] for n in doc["nodes"]} | {n["name"]: n["name"] for n in doc["nodes"]}
    hosts = config.getoption("hosts", None)
    specs = hosts.split(",") if hosts else [f"ssh://root@{n['mgmt_ip']}" for n in doc["nodes"]]
    chosen: dict[str, str] = {}
    for spec in specs:
        name = by_addr.get(_host_of(spec))
        if name is None:
            raise pytest.UsageError(f"host {spec!r} is not a node of {plan_path} (by name or management IP)")
        chosen[name] = spec
    knobs_file = config.getoption("cf_knobs")
    knobs = json.loads(Path(knobs_file).read_text(encoding="utf-8")) if knobs_file else None
    # only the targeted nodes' expectations
    nodes = nodes_of(doc, None if knobs is not None else Path(plan_path).parent, chosen, knobs)
    targets = {name: (nodes[name], spec) for name, spec in chosen.items()}
    for opt, attr in (("cf_pool", "pool"), ("cf_sku", "sku_name")):
        wanted = config.getoption(opt)
        if wanted:
            keep = set(wanted.split(","))
            targets = {k: v for k, v in targets.items() if getattr(v[0], attr) in keep}
    config._cf_targets = targets  # type: ignore[attr-defined]
    return targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cf_node" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("applies")
    accept: Callable[[NodeExpect], bool] = marker.args[0] if marker else (lambda n: True)
    nodes = [n for n, _ in _targets(metafunc.config).values() if accept(n)]
    if "rail" in metafunc.fixturenames:
        pairs = [(n.name, r.index) for n in nodes for r in n.rails]
        metafunc.parametrize(
            ["cf_node", "rail"],
            pairs,
            indirect=["cf_node"],
            scope="session",
            ids=[f"{n}-rail{r}" for n, r in pairs],
        )
    else:
        metafunc.parametrize("cf_node", [n.name for n in nodes], indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Checks that apply to none of the targeted nodes are left out, not reported as skipped."""
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        applies = callspec is None or isinstance(
            callspec.params.get("cf_node"), str
        )  # else: empty parameter set
        (keep if applies else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def cf_node(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def node(request: pytest.FixtureRequest, cf_node: str) -> NodeExpect:
    """This node's expectations (plan entry, SKU, tuning, software pins, certification policy)."""
    return _targets(request.config)[cf_node][0]


@pytest.fixture(scope="session")
def host(request: pytest.FixtureRequest, cf_node: str) -> Any:
    """The testinfra host of this node; testinfra caches it, and the ssh backend's ControlMaster keeps
    one SSH session per node for every check."""
    if cf_node not in _HOSTS:
        opt = request.config.option
        spec = _targets(request.config)[cf_node][1]
        _HOSTS[cf_node] = testinfra.get_host(
            spec,
            ssh_config=getattr(opt, "ssh_config", None),
            ssh_identity_file=getattr(opt, "ssh_identity_file", None),
            ssh_extra_args=getattr(opt, "ssh_extra_args", None),
        )
    return _HOSTS[cf_node]


@pytest.fixture(scope="session")
def probe(request: pytest.FixtureRequest, host: Any, node: NodeExpect) -> Probe:
    """Runs the node's commands with the policy's timeout; outputs (and errors) are cached per node. The
    cheap reads every validator module declares (`@prefetches`) are fetched first, in one round trip
    (neither with ``--cf-no-batch``)."""
    if node.name not in _PROBES:
        alone = bool(request.config.getoption("cf_no_batch"))
        p = _PROBES[node.name] = Probe(host, node.name, node.timeout, share=not alone)
        if not alone:
            p.prefetch(c for fn in PREFETCH.values() for c in fn(node))
    return _PROBES[node.name]
