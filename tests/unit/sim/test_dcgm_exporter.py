"""The simulated dcgm-exporter: its /metrics parses like the real exporter's (real captures in
tests/fixtures/real/dcgm-exporter-metrics__*), with values from the simulated GPUs and their faults."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from clusterforge.lab.sim import dcgm_exporter, repo_exporter

from .conftest import SimNode

REAL = Path(__file__).parents[2] / "fixtures/real"
K8S_LABELS = {"container", "namespace", "pod"}  # the GPU operator's pod attribution, absent on a bare node


def _families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = [(dict(s.labels), s.value) for s in fam.samples]
    return out


def _real() -> tuple[dict[str, list[tuple[dict[str, str], float]]], dict[str, str]]:
    text = (
        REAL / "dcgm-exporter-metrics__vgpu-h100-20c-k8s-pod-labels-portforward-noise-tkr-doc__1.txt"
    ).read_text()
    body = "\n".join(line for line in text.splitlines() if line.startswith(("#", "DCGM_"))) + "\n"
    types = {fam.name: fam.type for fam in text_string_to_metric_families(body)}
    return _families(body), types


def _scrape(node: SimNode, fields: list[str] | None = None) -> str:
    with node.env():
        st = dcgm_exporter.S.load()
        return dcgm_exporter.render(st, "570.133.20", "node-01", fields)


def test_labels_and_types_match_the_real_exporter(node: SimNode) -> None:
    real, real_types = _real()
    sim = _families(_scrape(node))
    real_keys = {k for samples in real.values() for labels, _ in samples for k in labels} - K8S_LABELS
    for name, samples in sim.items():
        assert len(samples) == 8, name  # one sample per GPU of the H100 SKU
        for labels, _ in samples:
            extra = {"err_code", "err_msg"} if name == "DCGM_FI_DEV_XID_ERRORS" else set()
            assert set(labels) == (real_keys - {"err_code", "err_msg"}) | extra, name
    shared = set(sim) & set(real)
    assert {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE"} <= shared
    sim_types = {fam.name: fam.type for fam in text_string_to_metric_families(_scrape(node))}
    for name in shared:
        assert sim_types[name] == real_types[name], name
    xid = dict(real["DCGM_FI_DEV_XID_ERRORS"][0][0])
    assert (xid["err_code"], xid["err_msg"]) == ("0", "No Error")
    assert {labels["err_msg"] for labels, _ in sim["DCGM_FI_DEV_XID_ERRORS"]} == {"No Error"}


def test_help_texts_are_the_real_counters_files(node: SimNode) -> None:
    real = dcgm_exporter.read_counters(
        (REAL / "dcgm-exporter-counters-csv__default-counters-etc__1.txt").read_text()
    )
    assert real and all(kind in ("gauge", "counter", "label") for _, kind, _ in real)
    for field, kind, help_text in real:
        if field in dcgm_exporter.FIELDS:
            assert dcgm_exporter.FIELDS[field][:2] == (kind, help_text), field


def test_counters_file_selects_the_fields(node: SimNode) -> None:
    real = dcgm_exporter.read_counters(
        (REAL / "dcgm-exporter-counters-csv__default-counters-etc__1.txt").read_text()
    )
    served = set(_families(_scrape(node, [r[0] for r in real])))
    assert served == {r[0] for r in real} & set(dcgm_exporter.FIELDS)
    assert "DCGM_FI_DEV_ROW_REMAP_PENDING" not in served  # not in NVIDIA's default counters
    shipped = dcgm_exporter.read_counters(repo_exporter.counters_csv())
    assert [r[0] for r in shipped] == list(dcgm_exporter.FIELDS)


def test_values_follow_the_gpus_and_faults(node: SimNode) -> None:
    sim = _families(_scrape(node))
    assert all(v == 0 for _, v in sim["DCGM_FI_DEV_XID_ERRORS"] + sim["DCGM_FI_DEV_ROW_REMAP_PENDING"])
    assert {labels["gpu"] for labels, _ in sim["DCGM_FI_DEV_GPU_TEMP"]} == {str(i) for i in range(8)}
    node.fault("ecc-uncorrectable", gpu=2)
    sim = _families(_scrape(node))
    by_gpu = {labels["gpu"]: (labels, v) for labels, v in sim["DCGM_FI_DEV_XID_ERRORS"]}
    assert by_gpu["2"][1] == 48 and by_gpu["2"][0]["err_code"] == "48"
    assert by_gpu["1"][1] == 0
    dbe = {labels["gpu"]: v for labels, v in sim["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]}
    assert dbe["2"] > 0 and dbe["3"] == 0
    pending = {labels["gpu"]: v for labels, v in sim["DCGM_FI_DEV_ROW_REMAP_PENDING"]}
    assert pending["2"] == 1
    node.clear("ecc-uncorrectable")
    node.fault("xid-79", gpu=5)
    sim = _families(_scrape(node))
    assert {labels["gpu"] for labels, _ in sim["DCGM_FI_DEV_GPU_TEMP"]} == {"0", "1", "2", "3", "4", "6", "7"}


def test_scrape_body_needs_the_driver(node: SimNode) -> None:
    with node.env():
        code, text = dcgm_exporter.body(repo_exporter.COUNTERS)
    assert code == 500 and "counters" in text  # no counters file under the test root
    with node.env():
        code, text = dcgm_exporter.body(None)
    assert code == 200 and "DCGM_FI_DEV_GPU_TEMP{" in text
    node.install("nvidia-driver", None)
    with node.env():
        code, text = dcgm_exporter.body(None)
    assert code == 500 and "NVML" in text


def test_address_flags() -> None:
    assert dcgm_exporter._args(["-f", "/x.csv", "-a", ":9500"]) == ("", 9500, "/x.csv")
    assert dcgm_exporter._args(["--address", "127.0.0.1:9401"]) == ("127.0.0.1", 9401, None)
    assert dcgm_exporter._args([]) == ("", 9400, None)
