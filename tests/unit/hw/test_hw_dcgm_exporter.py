"""dcgm_exporter.parse on the real dcgm-exporter metrics pages (sources quoted from SOURCES.md) and on
hand-made edge cases of the exposition format."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.dcgm_exporter import parse

Real = Callable[[str], str]
VGPU = "dcgm-exporter-metrics__vgpu-h100-20c-k8s-pod-labels-portforward-noise-tkr-doc__1.txt"
DROPLET = "dcgm-exporter-metrics__h100-droplet-docker-3.3.8-digitalocean-doc__excerpt2.txt"


def test_vgpu_page_with_pod_labels_and_port_forward_noise(real: Real) -> None:
    """dcgm-exporter-metrics__vgpu-h100-20c-k8s-pod-labels-portforward-noise-tkr-doc__1.txt - a GPU Operator
    walkthrough (`curl localhost:9400/metrics` through `kubectl port-forward`): the first line is the
    port-forward's own noise, so only the partial parse reads it."""
    text = real(VGPU)
    with pytest.raises(ParseError, match="line 1"):
        parse(text)
    [gpu] = parse(text, partial=True).values()
    assert (gpu.gpu, gpu.uuid, gpu.pci_bus_id, gpu.model) == (
        "0",
        "GPU-a0acdf3c-24b2-4dcd-853c-b19000000000",
        "00000000:03:00.0",
        "NVIDIA H100-20C",
    )
    assert gpu.get("DCGM_FI_DEV_SM_CLOCK") == 1755 and gpu.get("DCGM_FI_DEV_MEM_CLOCK") == 1593
    assert gpu.get("DCGM_FI_DEV_XID_ERRORS") == 0  # labelled err_code="0", err_msg="No Error"
    assert gpu.get("DCGM_FI_DEV_ROW_REMAP_PENDING") is None  # a vGPU profile's exporter does not serve it
    assert len(gpu.values) == 13


def test_droplet_excerpt(real: Real) -> None:
    """dcgm-exporter-metrics__h100-droplet-docker-3.3.8-digitalocean-doc__excerpt2.txt - DigitalOcean's
    "Enable GPU metrics" page: two families, then the author's `[...]`."""
    text = real(DROPLET)
    with pytest.raises(ParseError, match=r"\[\.\.\.\]"):
        parse(text)
    [gpu] = parse(text, partial=True).values()
    assert (gpu.pci_bus_id, gpu.model) == ("00000000:00:09.0", "NVIDIA H100 80GB HBM3")
    assert dict(gpu.values) == {"DCGM_FI_DEV_SM_CLOCK": 345, "DCGM_FI_DEV_MEM_CLOCK": 2619}


def _line(field: str, gpu: str, value: str, extra: str = "") -> str:
    return f'{field}{{gpu="{gpu}",UUID="GPU-{gpu}",pci_bus_id="00000000:1{gpu}:00.0"{extra}}} {value}'


def test_several_gpus_largest_value_per_field_and_other_families_skipped() -> None:
    text = "\n".join(
        [
            "# HELP DCGM_FI_DEV_ROW_REMAP_PENDING Whether remapping of rows is pending",
            "# TYPE DCGM_FI_DEV_ROW_REMAP_PENDING gauge",
            _line("DCGM_FI_DEV_ROW_REMAP_PENDING", "0", "0"),
            _line("DCGM_FI_DEV_ROW_REMAP_PENDING", "1", "1"),
            _line("DCGM_FI_DEV_XID_ERRORS", "1", "0", ',err_code="0"'),
            _line("DCGM_FI_DEV_XID_ERRORS", "1", "79", ',err_code="79",err_msg="GPU has fallen off the bus"'),
            'DCGM_FI_DEV_NVSWITCH_TEMPERATURE{nvswitch="0"} 41',  # not a GPU entity
            "process_open_fds 12",
            _line("DCGM_FI_DEV_GPU_TEMP", "0", "35", ',err_msg="a \\"quoted\\", comma"') + " 1700000000000",
        ]
    )
    gpus = parse(text + "\n")
    assert list(gpus) == ["0", "1"]
    assert (
        gpus["1"].get("DCGM_FI_DEV_ROW_REMAP_PENDING") == 1 and gpus["1"].get("DCGM_FI_DEV_XID_ERRORS") == 79
    )
    assert gpus["0"].get("DCGM_FI_DEV_GPU_TEMP") == 35 and gpus["0"].pci_bus_id == "00000000:10:00.0"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# HELP x y\nprocess_open_fds 3\n",  # no DCGM sample: not dcgm-exporter's page
        _line("DCGM_FI_DEV_GPU_TEMP", "0", "thirty") + "\n",
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0} 35\n',  # label quote never closed
        'DCGM_FI_DEV_GPU_TEMP{gpu="0" UUID="x"} 35\n',  # no comma between labels
        _line("DCGM_FI_DEV_GPU_TEMP", "0", "35") + "\n" + _line("DCGM_FI_DEV_FB_USED", "0", "")[:-1] + "\n",
    ],
    ids=["empty", "no-dcgm", "bad-value", "open-quote", "no-comma", "cut-last-line"],
)
def test_what_does_not_decode_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)


def test_partial_drops_a_cut_last_line_only() -> None:
    good = _line("DCGM_FI_DEV_GPU_TEMP", "0", "35")
    assert (
        parse(f'{good}\nDCGM_FI_DEV_FB_USED{{gpu="0",UU\n', partial=True)["0"].get("DCGM_FI_DEV_FB_USED")
        is None
    )
    with pytest.raises(ParseError):
        parse(f'DCGM_FI_DEV_FB_USED{{gpu="0" 1\n{good}\n', partial=True)
