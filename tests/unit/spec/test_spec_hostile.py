"""Issue 16: hostile specs. Every case exits 2 with one problem naming the field, fast, and writes nothing.

Values that would reach a shell, a configuration file, a path or an Ansible variable are refused by type
(spec/values.py); the loader refuses what it cannot read boundedly (spec/yamlsrc.py, spec/load.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
import yaml

from clusterforge.spec import load_spec_text
from clusterforge.spec.load import MAX_ENDPOINTS, MAX_NODES
from clusterforge.spec.yamlsrc import MAX_ALIAS_NODES, MAX_DEPTH

from ._helpers import LAB, edit, line_of, only, problems

# The issue's alias bomb: 342 bytes, nine levels of nine aliases (9^9 strings if expanded).
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{k}: &{k} [{','.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_the_bomb_is_the_issues_342_bytes() -> None:
    assert len(BOMB.encode()) == 342
    assert BOMB.startswith('a: &a ["lol","lol"') and BOMB.endswith("i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n")


def _fast(fn: Callable[[], Any], seconds: float = 5.0) -> Any:
    t0 = time.perf_counter()
    out = fn()
    assert time.perf_counter() - t0 < seconds
    return out


# --- the cases listed in the issue ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    ["roce-{index[0]}", "roce-{index.real}", "roce-{index!r}", "roce-{index:0999999999d}", "roce-{index:>7}"],
)
def test_pool_naming_with_anything_but_index_and_a_width(pattern: str) -> None:
    text = edit(LAB, 'naming: "roce-{index:02d}"', f'naming: "{pattern}"')
    p = _fast(lambda: only(text))
    assert (p.path, p.line) == ("pools[0].naming", line_of(text, pattern))
    assert "{index}" in p.expected and "at most 6" in p.expected
    assert p.found == repr(pattern)


def test_rack_naming_with_an_unknown_field() -> None:
    text = edit(
        LAB, "    count: 1\n    nodes_per_rack", '    naming: "r{foo}"\n    count: 1\n    nodes_per_rack'
    )
    p = only(text)
    assert (p.path, p.line) == ("site.racks.naming", line_of(text, "r{foo}"))
    assert p.found == "'r{foo}'" and "r{index:02d}" in p.expected


def test_invalid_timestamp() -> None:
    text = edit(LAB, "  description: Local lab", "  description: !!timestamp 2024-13-45 #")
    p = only(text)
    assert (p.path, p.line) == ("metadata.description", line_of(text, "!!timestamp"))
    assert "!!timestamp" in p.expected and "2024-13-45" in p.found


@pytest.mark.parametrize("value", ['"2"', "true", "2.0", "'two'"])
def test_count_is_a_real_integer(value: str) -> None:
    text = edit(LAB, '    count: 2\n    naming: "roce', f'    count: {value}\n    naming: "roce')
    p = only(text)
    assert (p.path, p.line) == ("pools[0].count", line_of(text, f"count: {value}"))
    assert "integer" in p.expected and p.fix.startswith("write a whole number")


def _with_inline_sku(mutate: Callable[[dict[str, Any]], None]) -> str:
    """The lab spec with its RoCE SKU written inline (from the catalog file), after `mutate`."""
    data = yaml.safe_load(LAB)
    cat = resources.files("clusterforge.spec") / "catalog" / "h100-sxm-8x400g-roce.yaml"
    sku = yaml.safe_load(cat.read_text(encoding="utf-8"))
    sku["name"] = "my-roce"
    mutate(sku)
    data["skus"][0] = sku
    data["pools"][0]["sku"] = sku["name"] if isinstance(sku["name"], str) else "my-roce"
    return yaml.safe_dump(data, sort_keys=False)


def test_a_300_character_sku_name() -> None:
    text = _with_inline_sku(lambda s: s.update(name="a" * 300))
    found = problems(text)
    assert {p.path for p in found} == {"skus[0].name", "pools[0].sku"}
    assert all("at most 64 characters" in p.expected for p in found)


def test_the_inline_sku_base_is_valid() -> None:
    assert "my-roce" in load_spec_text(_with_inline_sku(lambda s: None)).skus


# --- values that would reach a shell, a file or a template on a node ------------------------------


def _rail(**kv: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["compute_nics"]["rails"][0].update(kv)


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (_rail(hca="mlx5_0; id"), "skus[0].compute_nics.rails[0].hca"),
        (_rail(hca="mlx5_0$(id -un)"), "skus[0].compute_nics.rails[0].hca"),
        (_rail(hca="../../etc"), "skus[0].compute_nics.rails[0].hca"),
        (_rail(pci="0000:18:00.0$(id)"), "skus[0].compute_nics.rails[0].pci"),
        (_rail(pci="0000:18:00.0\nX=1"), "skus[0].compute_nics.rails[0].pci"),
        (_rail(pci="0000:18:20.0"), "skus[0].compute_nics.rails[0].pci"),  # device is 5 bits
        (_rail(netdev="eth0 x"), "skus[0].compute_nics.rails[0].netdev"),
        (_rail(netdev=".."), "skus[0].compute_nics.rails[0].netdev"),
        (_rail(netdev="eth/0"), "skus[0].compute_nics.rails[0].netdev"),
        (_rail(netdev="a" * 16), "skus[0].compute_nics.rails[0].netdev"),
        (_rail(gpu_link="PIX`id`"), "skus[0].compute_nics.rails[0].gpu_link"),
        (lambda s: s["storage_nics"].update(netdev="st:0"), "skus[0].storage_nics.netdev"),
        (lambda s: s["gpu"].update(model="{{ lookup('pipe', 'id') }}"), "skus[0].gpu.model"),
        (lambda s: s["gpu"].update(model="H100\x1b[2J"), "skus[0].gpu.model"),
        (lambda s: s["compute_nics"].update(firmware_prefix="28.;x"), "skus[0].compute_nics.firmware_prefix"),
        (lambda s: s["thresholds"]["ib_error_counters_max"].update({"../x": 1}), None),
        (lambda s: s["thresholds"]["h2d_gbs"].update(value=float("nan")), "skus[0].thresholds.h2d_gbs.value"),
        (lambda s: s["gpu"].update(count=True), "skus[0].gpu.count"),
    ],
)
def test_hostile_inline_sku_values(mutate: Callable[[dict[str, Any]], None], path: str | None) -> None:
    p = only(_with_inline_sku(mutate))
    assert p.path == (path or "skus[0].thresholds.ib_error_counters_max.../x")


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        (
            "time_servers: [10.244.0.1]",
            'time_servers: ["pool.ntp.org\\nserver evil iburst"]',
            "tuning.time_servers[0]",
        ),
        ("time_servers: [10.244.0.1]", 'time_servers: ["ntp.example.com:123"]', "tuning.time_servers[0]"),
        ("time_servers: [10.244.0.1]", "time_servers: [10.244.0.256]", "tuning.time_servers[0]"),
        ("tuned_profile: latency-performance", "tuned_profile: 'a; reboot'", "tuning.tuned_profile"),
        ("tuned_profile: latency-performance", "tuned_profile: 'a b'", "tuning.tuned_profile"),
        (
            'rdma: {stack: doca-ofed, version: "2.10.0"}',
            'rdma: {stack: doca-ofed, version: "2.10.0 $(id)"}',
            "software.rdma.version",
        ),
        ('nic_firmware: "28.43.2026"', 'nic_firmware: "28.43\\r2026"', "software.nic_firmware"),
        ("  name: lab\n  racks", "  name: 'lab;x'\n  racks", "site.name"),
        ("model: SN5600", "model: 'SN{{5600}}'", "fabrics.compute[0].switch.model"),
        ("  description: Local lab", "  description: '{% x %}' #", "metadata.description"),
        ("  validity_hours: 720", "  validity_hours: 100000000000000000000", "certification.validity_hours"),
        (
            'oversubscription: "1:1"\n      su_size: 32\n    - name: ib0',
            'oversubscription: "1:1\\n"\n      su_size: 32\n    - name: ib0',
            "fabrics.compute[0].oversubscription",
        ),
        ("  serial: 2\n", '  serial: "25%\\n"\n', "rollout.serial"),
        ('branch: "570"', 'branch: "５７０"', "software.nvidia_driver.branch"),
    ],
)
def test_hostile_cluster_values(old: str, new: str, path: str) -> None:
    found = problems(edit(LAB, old, new))
    assert path in {p.path for p in found}, "\n".join(p.render() for p in found)
    assert all(p.path == path or "nvidia_driver" in p.path for p in found)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1:8441; id", "$(id)", "bmc-01:99999", "2001:db8::1", "[2001:db8::1]x", "https://bmc/", "a b"],
)
def test_hostile_bmc_address(address: str) -> None:
    text = edit(
        LAB,
        "    fabric: roce0\n",
        f"    fabric: roce0\n    nodes:\n      - {{name: roce-01, bmc: {{address: {address!r}}}}}\n",
    )
    p = only(text)
    assert p.path == "pools[0].nodes[0].bmc.address"
    assert "port" in p.expected


@pytest.mark.parametrize(
    "address", ["127.0.0.1:8441", "10.10.1.11", "bmc-01.example.com:443", "[2001:db8::1]:443"]
)
def test_good_bmc_addresses(address: str) -> None:
    text = edit(
        LAB,
        "    fabric: roce0\n",
        f"    fabric: roce0\n    nodes:\n      - {{name: roce-01, bmc: {{address: {address!r}}}}}\n",
    )
    load_spec_text(text)


# --- a bounded loader ------------------------------------------------------------


def test_alias_bomb_fails_fast() -> None:
    p = _fast(lambda: only(BOMB), 3.0)
    assert f"at most {MAX_ALIAS_NODES}" in p.expected and "alias" in p.fix


def test_self_referencing_alias() -> None:
    p = only("a: &a [1, *a]\n")
    assert (p.path, p.line) == ("a[1]", 1) and "recursive alias" in p.found


def test_aliases_within_the_limit_still_work() -> None:
    text = edit(LAB, "nics_per_node: 2, mtu: 9000}", "nics_per_node: 2, mtu: &jumbo 9000}").replace(
        "cnp_priority: 6, mtu: 9000,", "cnp_priority: 6, mtu: *jumbo,"
    )
    assert "*jumbo" in text
    spec = load_spec_text(text)
    assert spec.cluster.tuning.roce.mtu == spec.cluster.fabrics.storage.mtu == 9000


def test_deep_nesting() -> None:
    deep = "x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    p = only(deep)
    assert f"at most {MAX_DEPTH} levels" in p.expected


def test_libyaml_depth_limit_is_an_input_error() -> None:
    p = _fast(lambda: only("x: " + "[" * 100_000 + "\n"))
    assert p.expected == "valid YAML"


@pytest.mark.parametrize(
    ("doc", "tag"),
    [
        ("a: !!python/object:os.system {}\n", "!!python/object:os.system"),
        ("a: !!binary aGVsbG8=\n", "!!binary"),
        ("a: !!set {x, y}\n", "!!set"),
        ("a: !!omap [x: 1]\n", "!!omap"),
        ("a: !foo bar\n", "!foo"),
    ],
)
def test_only_core_tags(doc: str, tag: str) -> None:
    p = only(doc)
    assert (p.path, p.found) == ("a", f"tag {tag}")


def test_merge_keys_are_refused_with_their_line() -> None:
    p = only("base: &b {x: 1}\nother:\n  <<: *b\n")
    assert (p.path, p.line, p.found) == ("other", 3, "a merge key (<<)")


def test_huge_integer_literal() -> None:
    text = edit(LAB, "  validity_hours: 720", "  validity_hours: " + "9" * 5000)
    p = only(text)
    assert p.path == "certification.validity_hours"


def test_too_many_nodes_is_refused_before_names_are_made() -> None:
    text = edit(
        LAB,
        '    count: 2\n    naming: "roce-{index:02d}"',
        '    count: 20000\n    naming: "roce-{index:05d}"',
    )
    text = edit(
        text, '    count: 2\n    naming: "ib-{index:02d}"', '    count: 20000\n    naming: "ib-{index:05d}"'
    )
    p = _fast(lambda: only(text), 2.0)
    assert (p.path, p.found) == ("pools", "40000 nodes") and str(MAX_NODES) in p.expected
    assert MAX_ENDPOINTS >= MAX_NODES


def test_too_many_pools() -> None:
    pool = '  - {name: p%d, sku: h100-sxm-8x400g-roce, count: 1, naming: "p%d-{index}", fabric: roce0}\n'
    text = edit(LAB, "pools:\n", "pools:\n" + "".join(pool % (i, i) for i in range(1025)))
    found = _fast(lambda: problems(text))
    assert any(p.path == "pools" and "at most 1024" in p.expected for p in found)
