"""dcgmi.parse_diag on every ``dcgmi-diag__*`` (table) and ``dcgmi-diag-json__*`` real capture
(sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.dcgmi import parse_diag

from .conftest import head

Real = Callable[[str], str]


def test_a10g_dcgm4_all_pass(real: Real) -> None:
    """dcgmi-diag__a10g-1gpu-dcgm442-r2-pass-dcgm124__9.txt - https://github.com/NVIDIA/DCGM/issues/124
    (jiayelamazon, 2026-01-28); ``dcgmi diag -r 2 -i 0``, DCGM 4.4.2 table with per-GPU rows."""
    d = parse_diag(real("dcgmi-diag__a10g-1gpu-dcgm442-r2-pass-dcgm124__9.txt"))
    assert (d.format, d.dcgm_version, d.driver_version, d.gpu_device_ids) == (
        "table",
        "4.4.2",
        "580.105.08",
        ("2237",),
    )
    assert [(t.category, t.name, t.result) for t in d.tests] == [
        ("Deployment", "software", "Pass"), ("Hardware", "memory", "Pass"), ("Integration", "pcie", "Pass"),
    ]  # fmt: skip
    assert d.test("PCIE").per_gpu == {0: "Pass"} and d.verdict == "Pass" and d.complete


def test_b200x8_pcie_fail_wrapped_warning(real: Real) -> None:
    """dcgmi-diag__b200x8-dcgm441-r2-pcie-fail-slurm-dcgm253__8.txt - DCGM issue 253, comment by gmarciani
    (Sep 2025); pcie Fail while every GPU row says Pass; warning wrapped mid-word at 45 characters."""
    d = parse_diag(real("dcgmi-diag__b200x8-dcgm441-r2-pcie-fail-slurm-dcgm253__8.txt"))
    assert d.gpu_device_ids == ("2901",) * 8 and d.driver_version == "570.172.08"
    pcie = d.test("pcie")
    assert pcie.result == "Fail" and set(pcie.per_gpu.values()) == {"Pass"} and len(pcie.per_gpu) == 8
    assert pcie.warnings == (
        "There was an internal error during the test: 'Output of child process (11167) couldn't be parsed: "
        "'* Line 1, Column 1   Syntax error: value, object or array expected. '' Check DCGM and system logs "
        "for errors. Reset GPU. Restart DCGM. Rerun diagnostics.",
    )
    assert d.verdict == "Fail" and d.failed_tests == ("pcie",)


def test_h100_dcgm3_info_row(real: Real) -> None:
    """dcgmi-diag__h100-gke-a3-dcgm338-elideng__1.txt - elideng repo assets/lab-02/dcgm-diag.txt @59869f14;
    DCGM 3.3.8 layout, wrapped Info row, empty Stress category."""
    d = parse_diag(real("dcgmi-diag__h100-gke-a3-dcgm338-elideng__1.txt"))
    assert (d.dcgm_version, d.driver_version, d.gpu_device_ids) == ("3.3.8", "535.309.01", ("2330",))
    assert len(d.tests) == 11 and d.verdict == "Pass"
    assert d.test("Persistence Mode").info == (
        'Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> '
        '-pm 1 " '
        "as root.",
    )
    assert (d.test("PCIe").result, d.test("PCIe").detail, d.test("GPU Memory").category) == (
        "Pass",
        "All",
        "Hardware",
    )


def test_l40s_no_closing_border(real: Real) -> None:
    """dcgmi-diag__l40s-x4-dcgm423-pcie-fail-internal-error-dcgm253__7.txt -
    https://github.com/NVIDIA/DCGM/issues/253
    (sebgoa). SOURCES.md: first line is the kubectl wrapper's, and "the paste has no closing border line
    (probably cut by the author)". Strict parsing treats the missing border as truncation; ``partial=True``
    reads the four re-joined warnings and the Fail verdict."""
    text = real("dcgmi-diag__l40s-x4-dcgm423-pcie-fail-internal-error-dcgm253__7.txt")
    with pytest.raises(ParseError, match="closing border"):
        parse_diag(text)
    d = parse_diag(text, partial=True)
    assert not d.complete and d.verdict == "Fail" and d.gpu_device_ids == ("26b9",) * 4
    pcie = d.test("pcie")
    assert len(pcie.warnings) == 4 and pcie.per_gpu == {0: "Pass", 1: "Pass", 2: "Pass", 3: "Pass"}
    assert pcie.warnings[0] == (
        "There was an internal error during the test: 'A child process (152) exited with non-zero status 1' "
        "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
    )


def test_gpu_memory_fail_excerpt(real: Real) -> None:
    """dcgmi-diag__r2-gpumem-fail-thermal-stas00__excerpt2.txt - stas00/ml-engineering
    compute/accelerator/nvidia/debug.md lines 225-232 @1c4d240d. EXCERPT: only the GPU Memory rows, last
    line cut by the author. Strict: no table header -> ParseError; partial: the 3.x multi-status rows."""
    text = real("dcgmi-diag__r2-gpumem-fail-thermal-stas00__excerpt2.txt")
    with pytest.raises(ParseError, match="table header"):
        parse_diag(text)
    d = parse_diag(text, partial=True)
    gm = d.test("GPU Memory")
    assert (
        gm.result == "Fail" and gm.per_gpu[0] == "Fail" and gm.per_gpu[7] == "Pass" and len(gm.per_gpu) == 8
    )
    assert gm.warnings[0].startswith("GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds")
    assert gm.warnings[0].endswith("fans, and any other components.")


def test_v100_verbose_r3(real: Real) -> None:
    """dcgmi-diag__v100-pcie-r3-verbose-dcgm339__6.txt - code-index file id 60815768068 (personal lab note);
    ``dcgmi diag -r 3 -v``: Info rows wrapped mid-word (``GP`` / ``U to Host``) must be re-joined."""
    d = parse_diag(real("dcgmi-diag__v100-pcie-r3-verbose-dcgm339__6.txt"))
    assert (d.dcgm_version, d.gpu_device_ids, d.verdict) == ("3.3.9", ("1db4",), "Pass")
    assert "GPU 0 GPU to Host latency:  2.028 us" in d.test("PCIe").info[0]
    assert (
        d.test("Diagnostic")
        .info[0]
        .endswith("calculated at approximately 21688.18 gigaflops during this test")
    )
    assert d.test("EUD Test").result == "Skip" and d.test("EUD Test").category == "Stress"
    assert d.test("Targeted Power").info == ("GPU 0 GPU 0 max power: 251.0 W average power usage: 247.8 W",)


def test_json_dcgm4_gb10_software_fail(real: Real) -> None:
    """dcgmi-diag-json__gb10-dgx-spark-dcgm423-r1-software-fail-fixture__4.txt - code-index file id
    62458550693
    (Go test constant claiming a verbatim ``dcgmi diag -r 1 -j`` from a GB10 DGX Spark; UNSURE-PROVENANCE)."""
    d = parse_diag(real("dcgmi-diag-json__gb10-dgx-spark-dcgm423-r1-software-fail-fixture__4.txt"))
    assert (d.format, d.dcgm_version, d.driver_version, d.gpu_device_ids) == (
        "json",
        "4.2.3",
        "580.82.09",
        ("2e12",),
    )
    sw = d.test("software")
    assert sw.result == "Fail" and sw.per_gpu == {0: "Fail"} and sw.category == "Deployment"
    assert sw.warnings[0].startswith("Persistence Mode: Persistence mode for GPU 0 is disabled.")
    assert sw.info[0].startswith("Error getting the SRAM Threshold Count for GPU 0.")
    assert d.verdict == "Fail"


def test_json_dcgm3_r2(real: Real) -> None:
    """dcgmi-diag-json__r2-1gpu-virtualclient__3.txt - SOURCES.md "same dir: DCGMIDiag_r2_results.json"
    @53e432ad (``dcgmi diag -r 2 -j``); one entry lightly hand-edited (spacing only)."""
    d = parse_diag(real("dcgmi-diag-json__r2-1gpu-virtualclient__3.txt"))
    assert [t.name for t in d.tests][:3] == ["Denylist", "NVML Library", "CUDA Main Library"] and len(
        d.tests
    ) == 11
    assert d.test("GPU Memory").info == ("GPU 0 Allocated 15206918958 bytes (97.3%)",)
    assert "\t\t13.15 GB/s" in d.test("PCIe").info[0] and d.test("PCIe").per_gpu == {0: "Pass"}
    assert d.verdict == "Pass" and d.dcgm_version is None


def test_json_dcgm3_r3_skip(real: Real) -> None:
    """dcgmi-diag-json__r3-1gpu-virtualclient__2.txt - "same dir: DCGMIDiag_r3_results.json" @53e432ad."""
    d = parse_diag(real("dcgmi-diag-json__r3-1gpu-virtualclient__2.txt"))
    assert d.test("EUD Test").result == "Skip" and d.test("Targeted Power").info == (
        "GPU 0 GPU 0 power average:\t70 W",
    )
    assert {t.category for t in d.tests} == {"Deployment", "Integration", "Hardware", "Stress"}
    assert d.verdict == "Pass"


def test_truncated_raises(real: Real) -> None:
    table = real("dcgmi-diag__a10g-1gpu-dcgm442-r2-pass-dcgm124__9.txt")
    with pytest.raises(ParseError, match="closing border"):
        parse_diag(head(table, 14))
    with pytest.raises(ParseError, match="invalid JSON"):
        parse_diag(real("dcgmi-diag-json__r3-1gpu-virtualclient__2.txt")[:1500])


@pytest.mark.parametrize(
    "text",
    [
        "Error: unable to establish a connection to the specified host: localhost\n",
        "{}",
        '{"DCGM Diagnostic": {}}',
        "+---+---+\n| Diagnostic | Result |\n",
    ],
)
def test_garbage_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse_diag(text)


# CONSTRUCTED (no public capture of an aborted run was found): the message dcgmi prints when the diagnostic
# cannot complete, as built in DCGM's dcgmi/Diag.cpp (3.x: "Error: Unable to complete diagnostic for group
# <id>. Return: (<code>) <errorString>."); -21 is DCGM_ST_CONNECTION_NOT_VALID in dcgm_structs.h.
ABORT_3X = (
    "Error: Unable to complete diagnostic for group 2147483647. "
    "Return: (-21) Host engine connection invalid/disconnected.\n"
)


def test_abort_before_table_is_an_errored_result() -> None:
    d = parse_diag(ABORT_3X)
    assert d.aborted and d.verdict == "Error" and d.return_code == -21 and not d.complete
    assert d.tests == () and d.errors == (ABORT_3X.strip(),) and d.failures() == {}
    # DCGM 4.x form: " : " before the text, system errors on the next line(s)
    d4 = parse_diag(
        "Error: Unable to complete diagnostic for group 2. Return: (-30) : The NVVS binary returned an "
        "error\nError: nvvs exited with status 1\n"
    )
    assert d4.return_code == -30 and len(d4.errors) == 2


def test_json_runtime_error_is_an_errored_result() -> None:
    """nvvs' JSON when it cannot start, as logged in https://github.com/NVIDIA/DCGM/issues/57 (the
    hostengine's debug line; tabs there stood for newlines)."""
    doc = (
        '{\n   "DCGM GPU Diagnostic" : {\n      "runtime_error" : "Unable to get the driver version: '
        "Host engine connection invalid/disconnected. Couldn't succeed despite 0 retries.\",\n"
        '      "version" : "440.37"\n   }\n}\n'
    )
    d = parse_diag(doc)
    assert d.aborted and d.verdict == "Error" and d.errors[0].startswith("Unable to get the driver version")


# CONSTRUCTED from the DCGM 2.x/3.x table layout (27-column name cell, 45 significant characters of text per
# row, as in the real 3.x captures above) with an Error row heading the Deployment category - the shape DCGM
# prints when a category cannot run. Row texts are illustrative.
def _row(name: str, text: str) -> str:
    return f"| {name:<26}| {text:<47}|\n"


ERROR_HEADED = (
    "+---------------------------+------------------------------------------------+\n"
    "| Diagnostic                | Result                                         |\n"
    "+===========================+================================================+\n"
    "|-----  Deployment  --------+------------------------------------------------|\n"
    + _row("Error", "GPU 0 is running at PCI link width 8X, which ")
    + _row("", "is below the minimum allowed link width of 16")
    + _row("", "X.")
    + _row("Denylist", "Pass")
    + _row("NVML Library", "Pass")
    + "+-----  Hardware  ----------+------------------------------------------------+\n"
    + _row("GPU Memory", "Pass - All")
    + "+---------------------------+------------------------------------------------+\n"
)


def test_category_headed_by_wrapped_error_row() -> None:
    d = parse_diag(ERROR_HEADED)
    assert d.complete and not d.aborted and d.verdict == "Fail"
    assert d.errors == (
        "Deployment: GPU 0 is running at PCI link width 8X, which is below the minimum allowed link width "
        "of 16X.",
    )
    assert [t.name for t in d.tests] == ["Denylist", "NVML Library", "GPU Memory"]
    assert d.test("Denylist").warnings == () and d.failed_tests == ()
    assert d.failures() == {
        "Deployment (Error)": "GPU 0 is running at PCI link width 8X, which is below the minimum allowed "
        "link width of 16X."
    }
