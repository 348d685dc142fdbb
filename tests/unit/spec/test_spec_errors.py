"""One test per kind of spec mistake: each names file, YAML path, line, expected, found and fix."""

from __future__ import annotations

from clusterforge.spec import load_spec_text
from tests.conftest import REPO

from ._helpers import CLUSTERS, FILE, LAB, at, edit, line_of, only, problems


def test_the_lab_spec_is_valid() -> None:
    spec = load_spec_text(LAB, FILE)
    assert spec.name == "lab"
    assert sorted(spec.skus) == ["h100-sxm-8x400g-ib", "h100-sxm-8x400g-roce"]


def test_typo_key_suggests_the_known_key() -> None:
    text = edit(LAB, "  serial: 2\n", "  seriall: 2\n")
    p = only(text)
    assert (p.path, p.line) == ("rollout.seriall", line_of(text, "seriall"))
    assert p.found == "unknown key 'seriall'"
    assert "serial" in p.expected and "max_fail_percentage" in p.expected
    assert p.fix == "did you mean 'serial'?"


def test_typo_key_at_top_level_still_runs_the_cross_checks() -> None:
    # `tunning` is unknown; the rest of the spec is still cross-checked (rack power here)
    text = edit(edit(LAB, "tuning:\n", "tunning:\n"), "power_kw: 45", "power_kw: 30")
    found = problems(text)
    assert at(found, "tunning").fix == "did you mean 'tuning'?"
    assert at(found, "site.racks.power_kw").line == line_of(text, "power_kw: 30")


def test_wrong_type() -> None:
    text = edit(LAB, '    count: 2\n    naming: "roce', '    count: two\n    naming: "roce')
    p = only(text)
    assert (p.path, p.line) == ("pools[0].count", line_of(text, "count: two"))
    assert "integer" in p.expected
    assert p.found == "'two'"
    assert p.fix.startswith("write a whole number")


def test_bad_enum() -> None:
    text = edit(LAB, "      type: roce\n", "      type: rocev2\n")
    p = only(text)
    assert (p.path, p.line) == ("fabrics.compute[0].type", line_of(text, "type: rocev2"))
    assert "'infiniband' or 'roce'" in p.expected
    assert p.found == "'rocev2'"
    assert p.fix == "use one of the allowed values"


def test_unknown_sku_with_suggestion() -> None:
    text = edit(LAB, "  - h100-sxm-8x400g-ib\npools", "  - h100-sxm-8x400-ib\npools")
    found = problems(text)
    p = at(found, "skus[1]")
    assert p.line == line_of(text, "- h100-sxm-8x400-ib")
    assert p.found == "unknown SKU 'h100-sxm-8x400-ib'"
    assert "a100-sxm-8x200g-hdr" in p.expected and "b200-sxm-8x400g-ib" in p.expected
    assert p.fix == "did you mean 'h100-sxm-8x400g-ib'?"
    # the pool that names the (correct) catalog SKU is told it is not among the spec's skus
    pool = at(found, "pools[1].sku")
    assert pool.found == "'h100-sxm-8x400g-ib'" and "h100-sxm-8x400g-roce" in pool.expected
    assert len(found) == 2


def test_pool_referencing_unknown_fabric() -> None:
    text = edit(LAB, "    fabric: ib0\n", "    fabric: ib1\n")
    p = only(text)
    assert (p.path, p.line) == ("pools[1].fabric", line_of(text, "fabric: ib1"))
    assert p.expected == "a compute fabric name (roce0, ib0)"
    assert p.found == "'ib1'"
    assert "fabrics.compute" in p.fix


def test_link_layer_mismatch() -> None:
    # the RoCE pool (Ethernet NICs) attached to the InfiniBand fabric
    text = edit(LAB, "    fabric: roce0\n", "    fabric: ib0\n")
    p = only(text)
    assert (p.path, p.line) == ("pools[0].fabric", 18)
    assert "'ib0' is infiniband, which needs InfiniBand NICs" in p.expected
    assert p.found == "h100-sxm-8x400g-roce with Ethernet NICs on 'ib0'"
    assert "attach pool 'roce' to a roce fabric" in p.fix


def test_nic_switch_speed_mismatch() -> None:
    text = edit(
        LAB,
        "{model: SN5600, radix: 64, port_speed_gbps: 400}",
        "{model: SN5600, radix: 64, port_speed_gbps: 800}",
    )
    p = only(text)
    assert (p.path, p.line) == ("fabrics.compute[0].switch.port_speed_gbps", line_of(text, "SN5600"))
    assert "NIC speed of pool 'roce'" in p.expected and "400 Gb/s" in p.expected
    assert p.found == "800 Gb/s"
    assert p.fix.startswith("set port_speed_gbps: 400")


def test_rails_differ_from_cidr_count() -> None:
    text = edit(LAB, " 10.245.7.0/24]", "]")
    p = only(text)
    assert (p.path, p.line) == ("addressing.compute.roce0", line_of(text, "roce0: ["))
    assert p.expected.startswith("8 CIDRs, one per rail (SKU h100-sxm-8x400g-roce has 8 compute NICs)")
    assert p.found == "7 CIDRs"
    assert p.fix == "list exactly one CIDR per rail"


def test_cidr_too_small() -> None:
    # 4 nodes + 10 reserved + network + broadcast need 16 addresses: a /29 has 8
    text = edit(LAB, "  management: 10.244.0.0/24", "  management: 10.244.0.0/29")
    p = only(text)
    assert (p.path, p.line) == ("addressing.management", line_of(text, "10.244.0.0/29"))
    assert p.expected == "room for 4 hosts after 10 reserved addresses"
    assert p.found == "10.244.0.0/29 (0 usable)"
    assert p.fix == "use a /28 or larger"


def test_overlapping_cidrs() -> None:
    text = edit(LAB, "  storage: 10.246.0.0/24", "  storage: 10.245.0.0/16")
    found = problems(text)
    # the /16 covers all sixteen rail subnets: each is reported against it
    assert len(found) == 16
    p = at(found, "addressing.compute.roce0[3]")
    assert p.line == line_of(text, "10.245.3.0/24")
    assert p.expected == "a subnet that does not overlap addressing.storage (10.245.0.0/16)"
    assert p.found == "10.245.3.0/24"
    assert p.fix == "choose disjoint CIDRs"


def test_rack_power_exceeded() -> None:
    # 4 x 10.2 kW = 40.8 kW in the lab's one rack
    text = edit(LAB, "power_kw: 45", "power_kw: 30")
    p = only(text)
    assert (p.path, p.line) == ("site.racks.power_kw", line_of(text, "power_kw: 30"))
    assert p.expected == "every rack within its 30 kW budget"
    assert p.found == "1 rack(s) over budget, the worst r01 with 40.8 kW of nodes"
    assert "lower nodes_per_rack (to 2 at most" in p.fix


def test_too_few_racks() -> None:
    text = edit(LAB, "nodes_per_rack: 4", "nodes_per_rack: 3")
    p = only(text)
    assert (p.path, p.line) == ("site.racks.count", line_of(text, "    count: 1"))
    assert p.expected == "room for 4 nodes at 3 per rack (>= 2 racks)"
    assert (p.found, p.fix) == ("1 racks", "add racks")


def test_duplicate_pool_names() -> None:
    text = edit(LAB, "  - name: ib\n", "  - name: roce\n")
    p = only(text)
    assert (p.path, p.line) == ("pools[1].name", 19)
    assert p.expected == "unique pool names"
    assert p.found == "'roce' again (first at pools[0])"
    assert p.fix == "rename one of the pools"


def test_duplicate_node_names_across_pools() -> None:
    text = edit(LAB, 'naming: "ib-{index:02d}"', 'naming: "roce-{index:02d}"')
    p = only(text)
    assert (p.path, p.line) == ("pools[1].naming", 22)
    assert p.expected == "node names unique across the cluster"
    assert p.found == "'roce-01' generated by pool 'roce' and by pool 'ib'"
    assert "distinct naming pattern" in p.fix


def test_naming_with_characters_a_hostname_cannot_have() -> None:
    text = edit(LAB, 'naming: "ib-{index:02d}"', 'naming: "IB_{index:02d}"')
    p = only(text)
    assert (p.path, p.found) == ("pools[1].naming", "'IB_{index:02d}'")
    assert "a-z, 0-9 and '-'" in p.expected and "{index}" in p.expected


def test_naming_that_is_not_a_hostname() -> None:
    # every character is allowed, but a hostname cannot start with '-'
    text = edit(LAB, 'naming: "ib-{index:02d}"', 'naming: "-ib{index:02d}"')
    p = only(text)
    assert (p.path, p.found) == ("pools[1].naming", "'-ib01'")
    assert "valid hostnames" in p.expected


def test_driver_version_not_in_branch() -> None:
    text = edit(LAB, 'version: "570.133.20"', 'version: "565.57.01"')
    p = only(text)
    assert (p.path, p.line) == ("software.nvidia_driver.version", line_of(text, 'version: "565.57.01"'))
    assert p.expected == "a version of branch 570 (570.x)"
    assert p.found == "565.57.01"
    assert 'branch: "565"' in p.fix


def test_threshold_override_for_unknown_sku() -> None:
    text = edit(
        LAB,
        "  join_tiers: [quick]\n",
        "  join_tiers: [quick]\n  thresholds:\n    h100-sxm-8x400g:\n      allreduce_busbw_gbs: 400\n",
    )
    p = only(text)
    assert (p.path, p.line) == ("certification.thresholds.h100-sxm-8x400g", line_of(text, "h100-sxm-8x400g:"))
    assert p.expected == "a SKU of this spec (h100-sxm-8x400g-roce, h100-sxm-8x400g-ib)"
    assert p.found == "unknown SKU 'h100-sxm-8x400g'"
    assert p.fix == "use a SKU name listed under skus"


def test_threshold_override_for_unknown_threshold() -> None:
    text = edit(
        LAB,
        "  join_tiers: [quick]\n",
        "  join_tiers: [quick]\n  thresholds:\n    h100-sxm-8x400g-ib:\n      allreduce_busbw: 400\n",
    )
    p = only(text)
    assert (p.path, p.line) == (
        "certification.thresholds.h100-sxm-8x400g-ib.allreduce_busbw",
        line_of(text, "allreduce_busbw: 400"),
    )
    assert "allreduce_busbw_gbs" in p.expected and "ib_write_bw_gbps" in p.expected
    assert p.found == "unknown threshold 'allreduce_busbw'"
    assert p.fix == "did you mean 'allreduce_busbw_gbs'?"


def test_fabric_too_big_for_radix_suggests_a_higher_radix() -> None:
    # 12,500 nodes x 8 rails in 391 SUs of 32 = 100,096 endpoints > 64^3/4 = 65,536;
    # the smallest even radix R with R^3/4 >= 100,096 is 74 (74^3/4 = 101,306; 72^3/4 = 93,312)
    big = (REPO / "bench" / "specs" / "h100-100k.yaml").read_text()
    text = edit(big, "radix: 144", "radix: 64")
    p = only(text)
    assert (p.path, p.line) == ("fabrics.compute[0].switch.radix", line_of(text, "radix: 64"))
    assert p.expected == "at most radix³/4 = 65536 endpoints for three tiers of radix 64 (fabric 'ib0')"
    assert p.found == "100096 endpoints (391 SUs x 32 nodes x 8 rails)"
    assert p.fix.startswith("use switches of radix >= 74")


def test_su_size_plus_uplinks_exceeds_radix() -> None:
    # 1:1 -> uplinks = su_size: 40 + 40 = 80 > 64; the largest su_size is 64 x 1 / 2 = 32
    text = edit(LAB, "      su_size: 32\n    - name: ib0", "      su_size: 40\n    - name: ib0")
    p = only(text)
    assert (p.path, p.line) == ("fabrics.compute[0].su_size", line_of(text, "su_size: 40"))
    assert "40 uplinks <= radix 64" in p.expected
    assert p.found == "su_size 40 -> 80 ports"
    assert p.fix.startswith("use su_size <= 32")


def test_yaml_syntax_error_names_the_line() -> None:
    text = edit(LAB, "  name: lab\n  description", "  name: [lab\n  description")
    p = only(text)
    assert p.path == ""
    assert p.expected == "valid YAML"
    # the parser notices on the next line; the report also names where the open '[' started
    assert p.found == "did not find expected ',' or ']' (while parsing a flow sequence that starts at line 6)"
    assert p.line == 7
    assert p.fix == "fix the YAML syntax at that line"


def test_empty_file() -> None:
    p = only("# nothing but a comment\n")
    assert p.found == "an empty file"
    assert "apiVersion: clusterforge/v1" in p.expected
    assert "inventory/clusters/lab.yaml" in p.fix


def _inline_sku(name: str, gpu_of_rail0: int) -> str:
    cat = (REPO / "src/clusterforge/spec/catalog/h100-sxm-8x400g-ib.yaml").read_text()
    body = [ln for ln in cat.splitlines() if ln and not ln.startswith("#")]
    body[0] = f"name: {name}"
    text = "\n".join(body)
    text = text.replace(
        "  - rail: 0\n    hca: mlx5_0\n    netdev: ibp24s0\n    gpu: 0",
        f"  - rail: 0\n    hca: mlx5_0\n    netdev: ibp24s0\n    gpu: {gpu_of_rail0}",
    )
    lines = text.splitlines()
    return "\n".join(["  - " + lines[0], *("    " + ln for ln in lines[1:])]) + "\n"


def test_inline_sku_is_accepted() -> None:
    text = edit(
        LAB, "  - h100-sxm-8x400g-ib\npools", "  - h100-sxm-8x400g-ib\n" + _inline_sku("my-h100", 0) + "pools"
    )
    text = edit(text, "    sku: h100-sxm-8x400g-ib\n", "    sku: my-h100\n")
    spec = load_spec_text(text, FILE)
    assert spec.skus["my-h100"].compute_nics.rails[0].gpu == 0


def test_bad_inline_sku_rail_maps_to_gpu_9() -> None:
    text = edit(
        LAB, "  - h100-sxm-8x400g-ib\npools", "  - h100-sxm-8x400g-ib\n" + _inline_sku("my-h100", 9) + "pools"
    )
    text = edit(text, "    sku: h100-sxm-8x400g-ib\n", "    sku: my-h100\n")
    p = only(text)  # the pool using the broken SKU is not reported a second time
    assert (p.path, p.line) == ("skus[2].compute_nics.rails[0].gpu", line_of(text, "gpu: 9"))
    assert p.expected == "a GPU index 0..7 (gpu.count is 8)"
    assert p.found == "9"
    assert "GPU" in p.fix


def test_a_bad_inline_sku_does_not_taint_the_next_one() -> None:
    two = _inline_sku("bad-h100", 9) + _inline_sku("good-h100", 0)
    text = edit(LAB, "  - h100-sxm-8x400g-ib\npools", "  - h100-sxm-8x400g-ib\n" + two + "pools")
    text = edit(text, "    sku: h100-sxm-8x400g-ib\n", "    sku: good-h100\n")
    text = edit(text, "power_kw: 45", "power_kw: 30")
    # the rack only exceeds 30 kW if the ib pool's good-h100 nodes (2 x 10.2 kW) are counted
    paths = sorted(p.path for p in problems(text))
    assert paths == ["site.racks.power_kw", "skus[2].compute_nics.rails[0].gpu"]


def test_bad_inline_sku_typo_key_has_no_union_noise() -> None:
    text = edit(
        LAB, "  - h100-sxm-8x400g-ib\npools", "  - h100-sxm-8x400g-ib\n" + _inline_sku("my-h100", 0) + "pools"
    )
    text = edit(text, "    node_power_kw: 10.2\n", "    node_power_kwh: 10.2\n")
    found = problems(text)
    assert sorted(p.path for p in found) == ["skus[2].node_power_kw", "skus[2].node_power_kwh"]
    typo = at(found, "skus[2].node_power_kwh")
    assert typo.fix == "did you mean 'node_power_kw'?"
    assert typo.line == line_of(text, "node_power_kwh")
    assert at(found, "skus[2].node_power_kw").found == "nothing"


NODES = "    fabric: ib0\n    nodes:\n      - name: {name}\n        management_ip: {ip}\n"


def test_node_entry_with_unknown_node_name() -> None:
    text = edit(LAB, "    fabric: ib0\n", NODES.format(name="ib-07", ip="10.244.0.200"))
    p = only(text)
    assert (p.path, p.line) == ("pools[1].nodes[0].name", line_of(text, "name: ib-07"))
    assert p.expected == "a node of pool 'ib' (ib-01 .. ib-02)"
    assert p.found == "'ib-07'"
    assert "raise its count" in p.fix


def test_node_entry_with_management_ip_outside_cidr() -> None:
    text = edit(LAB, "    fabric: ib0\n", NODES.format(name="ib-02", ip="10.99.0.5"))
    p = only(text)
    assert (p.path, p.line) == ("pools[1].nodes[0].management_ip", line_of(text, "10.99.0.5"))
    assert p.expected == "a host address in addressing.management (10.244.0.0/24)"
    assert p.found == "10.99.0.5"
    assert p.fix == "pick an address inside addressing.management"


def test_node_entry_mac_for_unknown_netdev() -> None:
    text = edit(
        LAB,
        "    fabric: ib0\n",
        "    fabric: ib0\n    nodes:\n      - name: ib-01\n        macs: {eth9: 02:00:00:00:00:01}\n",
    )
    p = only(text)
    assert p.path == "pools[1].nodes[0].macs.eth9"
    assert "mgmt" in p.expected and "ibp24s0" in p.expected


def test_duplicate_yaml_key() -> None:
    text = edit(LAB, '  cuda: "12.8"\n', '  cuda: "12.8"\n  cuda: "12.9"\n')
    p = only(text)
    assert (p.path, p.line) == ("software.cuda", line_of(text, 'cuda: "12.9"'))
    assert p.expected == "each key once in a mapping"
    first = line_of(text, '"12.8"')
    assert p.found == f"duplicate key 'cuda' (first at line {first})"
    assert p.fix == "remove or merge the duplicate key"


def test_malformed_oversubscription() -> None:
    text = edit(
        LAB,
        '      oversubscription: "1:1"\n      su_size: 32\n    - name: ib0',
        '      oversubscription: "1-1"\n      su_size: 32\n    - name: ib0',
    )
    p = only(text)
    assert (p.path, p.line) == ("fabrics.compute[0].oversubscription", line_of(text, '"1-1"'))
    assert "'down:up'" in p.expected and "'2:1'" in p.expected
    assert p.found == "'1-1'"


def test_every_mistake_in_one_report() -> None:
    text = LAB
    for old, new in [
        ("  serial: 2\n", "  seriall: 2\n"),
        ("      type: roce\n", "      type: rocev2\n"),
        ('  cuda: "12.8"\n', '  cuda: "12.8"\n  cuda: "12.9"\n'),
        ("  - h100-sxm-8x400g-ib\npools", "  - h100-sxm-8x400-ib\npools"),
    ]:
        text = edit(text, old, new)
    paths = {p.path for p in problems(text)}
    assert {"rollout.seriall", "fabrics.compute[0].type", "software.cuda", "skus[1]"} <= paths


def test_cross_field_mistakes_in_one_report() -> None:
    text = LAB
    for old, new in [
        ("power_kw: 45", "power_kw: 30"),
        ('version: "570.133.20"', 'version: "565.57.01"'),
        (" 10.245.7.0/24]", "]"),
        ('naming: "ib-{index:02d}"', 'naming: "roce-{index:02d}"'),
    ]:
        text = edit(text, old, new)
    paths = [p.path for p in problems(text)]
    assert sorted(paths) == sorted(
        [
            "site.racks.power_kw",
            "software.nvidia_driver.version",
            "addressing.compute.roce0",
            "pools[1].naming",
        ]
    )


def test_example_specs_are_valid() -> None:
    names = sorted(p.stem for p in CLUSTERS.glob("*.yaml"))
    assert {"lab", "h100-ib-1su", "h100-ib-4su", "h100-roce-2su", "b200-ib-16su", "gb200-nvl72-2rack"} <= set(
        names
    )
    for p in sorted(CLUSTERS.glob("*.yaml")):
        assert load_spec_text(p.read_text(), str(p)).name == p.stem


def test_nic_firmware_of_another_nic_family() -> None:
    """A ConnectX-6 firmware pin (20.x) on ConnectX-7 SKUs (28.x): every node would fail nic_firmware."""
    text = edit(LAB, 'nic_firmware: "28.43.2026"', 'nic_firmware: "20.39.1002"')
    p = only(text)
    assert (p.path, p.line) == ("software.nic_firmware", line_of(text, "nic_firmware"))
    assert "compute NICs of pool roce" in p.expected
    assert "versions 28.x" in p.expected and p.found == "20.39.1002"
    assert "cannot share one pin" in p.fix


def test_storage_network_faster_than_the_nics() -> None:
    """A 400 Gb/s storage network for the lab SKUs, whose storage NICs run slower: the links cannot."""
    import re

    text = re.sub(r"storage: \{speed_gbps: \d+", "storage: {speed_gbps: 800", LAB, count=1)
    assert text != LAB
    found = problems(text)
    assert {p.path for p in found} == {"fabrics.storage.speed_gbps"} and len(found) == 2  # one per SKU
    assert all(
        p.found == "800 Gb/s" and "storage NICs (storage_nics.speed_gbps)" in p.expected for p in found
    )
    assert {"h100-sxm-8x400g-roce", "h100-sxm-8x400g-ib"} == {
        p.expected.split("SKU ")[1].split("'")[0] for p in found
    }
