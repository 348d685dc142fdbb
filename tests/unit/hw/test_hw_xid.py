"""xid.parse on every ``xid__*`` real capture (sources quoted from SOURCES.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusterforge.hw import ParseError
from clusterforge.hw.xid import parse

Real = Callable[[str], str]


def test_xid79_fallen_off_bus_dmesg_T(real: Real) -> None:
    """xid__535.161-dmesg-T-xid79-fallen-off-bus-crashdump-akash209__7.txt -
    https://github.com/akash-network/support/issues/209 (``dmesg -T | grep NVRM``); indented continuation
    lines."""
    [ev] = parse(real("xid__535.161-dmesg-T-xid79-fallen-off-bus-crashdump-akash209__7.txt"))
    assert (ev.xid, ev.pci_bus_id, ev.pid, ev.process_name) == (79, "0000:a1:00", None, None)
    assert ev.message == "GPU has fallen off the bus." and ev.line_no == 3
    assert (ev.timestamp, ev.timestamp_format) == ("Fri Apr  5 21:29:39 2024", "ctime")


def test_xid13_b200_mmu_fault_no_pid(real: Real) -> None:
    """xid__b200-b300-dmesg-T-xid13-mmu-fault-esr-trtllm15610__9.txt -
    https://github.com/NVIDIA/TensorRT-LLM/issues/15610; Xid 13 lines without pid/name fields."""
    events = parse(real("xid__b200-b300-dmesg-T-xid13-mmu-fault-esr-trtllm15610__9.txt"))
    assert (
        len(events) == 8
        and {e.xid for e in events} == {13}
        and {e.pci_bus_id for e in events} == {"0000:70:00"}
    )
    assert (
        events[0].message == "Graphics SM Warp Exception on (GPC 1, TPC 1, SM 1): MMU Fault"
        and events[0].pid is None
    )
    assert events[1].message.startswith("Graphics Exception: ESR 0x5167b0=0x80f0017")
    assert events[7].timestamp == "Wed Jun 24 15:44:20 2026"


def test_xid45_journal_caused_by(real: Real) -> None:
    """xid__blackwell-journal-xid45-caused-by-149-145-ogkm1150__8.txt -
    https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150 (jed-hacker); ``kernel:`` prefix only.
    SOURCES.md: TRUNCATED by the author (8th line dropped) - the 7 remaining lines are complete."""
    events = parse(real("xid__blackwell-journal-xid45-caused-by-149-145-ogkm1150__8.txt"))
    assert len(events) == 7 and {e.xid for e in events} == {45}
    assert [e.caused_by_xid for e in events] == [149, 145, 145, 145, 149, 145, 145]
    e0 = events[0]
    assert (e0.pci_bus_id, e0.pid, e0.process_name, e0.timestamp, e0.timestamp_format) == (
        "0000:dc:00", 1818990, "python3", None, "none")  # fmt: skip
    assert e0.message == "Ch 00000001 caused by previous Xid 149"


def test_xid13_109_ctime_with_peermem_noise(real: Real) -> None:
    """xid__gpu-node-dmesg-ctime-xid13-109-peermem-gpudpr46__10.txt - https://github.com/leptonai/gpud/pull/46
    (``dmesg --ctime``); a non-NVRM nvidia-peermem line is skipped; pid='<unknown>' -> None."""
    events = parse(real("xid__gpu-node-dmesg-ctime-xid13-109-peermem-gpudpr46__10.txt"))
    assert [e.xid for e in events] == [13, 13, 13, 109]
    assert events[0].pid is None and events[0].process_name is None
    last = events[3]
    assert (last.pid, last.process_name, last.pci_bus_id) == (1797828, "pt_main_thread", "0000:cb:00")
    assert last.message == "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"


def test_xid119_gsp_timeouts(real: Real) -> None:
    """xid__gpu-xid119-gsp-timeout-gpud__2.txt - leptonai/gpud:
    pkg/nvidia-query/xid/testdata/dmesg-with-xid-119.log
    @d5ea0d8c; 5x Xid 119 with GSP RPC history dumps and a kernel stack trace in between."""
    events = parse(real("xid__gpu-xid119-gsp-timeout-gpud__2.txt"))
    assert [e.xid for e in events] == [119] * 5
    assert [e.process_name for e in events] == [
        "nvidia-smi",
        "nvidia-smi",
        "nvidia-smi",
        "cache_mgr_main",
        "gpud",
    ]
    assert events[0].message.startswith("Timeout after 6s of waiting for RPC response from GPU4 GSP!")
    assert events[4].pid == 1240590 and events[4].timestamp == "Sun Feb 23 16:30:13 2025"


def test_xid48_63_94_iso(real: Real) -> None:
    """xid__gpu-xid48-63-94-dbe-rowremap-gpud__3.txt - leptonai/gpud:
    pkg/dmesg/testdata/dmesg-time-format-iso.log
    @45e106fb (``dmesg --time-format=iso``): DBE -> row remap -> contained Xid 94 sequence."""
    events = parse(real("xid__gpu-xid48-63-94-dbe-rowremap-gpud__3.txt"))
    assert [e.xid for e in events] == [48, 63] + [94] * 9
    assert events[0].timestamp == "2024-11-15T12:02:03,470068+00:00" and events[0].timestamp_format == "iso"
    assert "double bit error (DBE)" in events[0].message and events[0].line_no == 11
    assert (
        events[1].message
        == "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate."
    )
    assert events[3].process_name == "python3.10" and events[3].message == "Ch 00000008"


def test_nvrm_without_xid(real: Real) -> None:
    """xid__h100-gke-a3-nvrm-no-xid-elideng__nvrm1.txt - elideng repo assets/lab-14/dmesg_nvrm.txt @86f3cf6f.
    NEGATIVE case: NVRM lines (raw monotonic timestamps) but no Xid -> empty list."""
    assert parse(real("xid__h100-gke-a3-nvrm-no-xid-elideng__nvrm1.txt")) == []


def test_other_log_forms() -> None:
    text = (
        "6,1234,5678901234,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=42, name=python, Ch 00000009, intr 1000000"
        "0.\n"
        " SUBSYSTEM=pci\n"
        "Nov 15 05:39:15 node7 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:9b:00): 74, pid=1, name=x, NVLink"
        ": fatal\n"
        "2024-11-15T05:39:15+0000 node7 kernel: NVRM: Xid (0000:18:00): 62, Internal micro-controller halt\n"
        "[  123.456789] NVRM: Xid (PCI:0000:18:00.0): 92, High single-bit ECC error rate\n"
        "NVRM: Xid (PCI:0000:18:00): 64, pid='<unknown>', name=<unknown>, ECC row remapping failure\n"
        "Nov 15 05:39:16 node7 systemd[1]: Started Session 3 of user root.\n"
    )
    events = parse(text)
    assert [(e.xid, e.timestamp_format) for e in events] == [
        (31, "kmsg"), (74, "syslog"), (62, "journal-iso"), (92, "monotonic"), (64, "none")]  # fmt: skip
    assert (
        events[0].timestamp == "5678901234"
        and events[0].pid == 42
        and events[1].timestamp == "Nov 15 05:39:15"
    )
    assert events[2].pci_bus_id == "0000:18:00" and events[3].pci_bus_id == "0000:18:00.0"
    assert parse("") == [] and parse("\n\n") == []


def test_truncated_line_and_garbage_raise(real: Real) -> None:
    """The first line of the ogkm1150 capture cut mid-line (as its dropped 8th line was) cannot be decoded."""
    line = real("xid__blackwell-journal-xid45-caused-by-149-145-ogkm1150__8.txt").splitlines()[0]
    with pytest.raises(ParseError, match="undecodable"):
        parse(line[:31])
    with pytest.raises(ParseError, match="not a recognised kernel log line"):
        parse("hello world\n")
    with pytest.raises(ParseError, match="pid/name"):
        parse("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=abc, name=x, Ch 1\n")


def test_dmesg_decode_iso(real: Real) -> None:
    """xid__gpu-node-dmesg-decode-iso-xid13-43-gpudmemory__11.txt - leptonai/gpud
    components/memory/testdata/dmesg.decode.iso.log lines 1-17 @4a8de33a (``dmesg --decode
    --time-format=iso``: ``kern  :warn  : <ISO> NVRM: ...``)."""
    events = parse(real("xid__gpu-node-dmesg-decode-iso-xid13-43-gpudmemory__11.txt"))
    assert [e.xid for e in events] == [13] * 16 + [43]
    e0, last = events[0], events[-1]
    assert (e0.timestamp, e0.timestamp_format, e0.pci_bus_id) == (
        "2025-01-21T04:41:44,283302+00:00",
        "iso",
        "0000:38:00",
    )
    assert (last.pid, last.process_name, last.message) == (2924364, "pt_main_thread", "Ch 00000008")


def test_gpu_fallen_off_bus_without_xid(real: Real) -> None:
    """xid__570.158-dmesg-gpu-fallen-off-bus-no-xid-probe-failed-nvsentinel155__12.txt -
    https://github.com/NVIDIA/NVSentinel/issues/155: the 3-line "fallen off the bus" record and no Xid
    line -> one GPU-lost event, reported as Xid 79."""
    [ev] = parse(real("xid__570.158-dmesg-gpu-fallen-off-bus-no-xid-probe-failed-nvsentinel155__12.txt"))
    assert (ev.xid, ev.gpu_lost, ev.pci_bus_id, ev.line_no, ev.timestamp) == (
        79,
        True,
        "0000:b3:00",
        1,
        "1843.308145",
    )
    assert ev.message == (
        "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off the "
        "bus and is not responding to commands."
    )


def test_gpu_lost_not_doubled_when_xid79_is_printed(real: Real) -> None:
    """xid__535.161-...akash209__7.txt prints Xid 79 and the one-line "GPU has fallen off the bus": one
    event. The same capture without its Xid line (CONSTRUCTED by dropping it) still gives a GPU-lost one."""
    text = real("xid__535.161-dmesg-T-xid79-fallen-off-bus-crashdump-akash209__7.txt")
    assert [(e.xid, e.gpu_lost) for e in parse(text)] == [(79, False)]
    no_xid = "".join(ln for ln in text.splitlines(keepends=True) if "Xid" not in ln)
    [ev] = parse(no_xid)
    assert (ev.xid, ev.gpu_lost, ev.pci_bus_id) == (79, True, "0000:a1:00")


def test_journal_multiline_gpu_lost() -> None:
    """CONSTRUCTED from the driver's message (open-gpu-kernel-modules nv.c: "NVRM: The NVIDIA GPU
    %04x:%02x:%02x.%x\\nNVRM: (PCI ID: %04x:%04x) installed in this system has\\nNVRM: fallen off the bus and
    is not responding to commands.\\n") as journalctl prints each line with its own prefix."""
    log = (
        "2026-02-14T05:03:41+0000 gpu-1 kernel: NVRM: The NVIDIA GPU 0000:44:00.0\n"
        "2026-02-14T05:03:41+0000 gpu-1 kernel: NVRM: (PCI ID: 10de:2330) installed in this system has\n"
        "2026-02-14T05:03:41+0000 gpu-1 kernel: NVRM: fallen off the bus and is not responding to commands.\n"
        "2026-02-14T05:03:41+0000 gpu-1 kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    )
    [ev] = parse(log)
    assert ev.gpu_lost and ev.pci_bus_id == "0000:44:00" and ev.timestamp_format == "journal-iso"
    # a "The NVIDIA GPU ..." record that is not about the bus is not an event
    assert parse("[    5.1] NVRM: The NVIDIA GPU 0000:44:00.0\n          NVRM: is not supported.\n") == []


def test_pid_without_name_older_driver() -> None:
    """CONSTRUCTED (no public capture found): older drivers' Xid line with ``pid=N,`` and no ``name=``
    field, e.g. "NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus." (format per NVIDIA's
    Xid documentation examples)."""
    [ev] = parse("[ 1234.5] NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.\n")
    assert (ev.xid, ev.pid, ev.process_name, ev.message) == (79, 0, None, "GPU has fallen off the bus.")
    [ev] = parse("[ 9.9] NVRM: Xid (PCI:0000:3b:00): 31, pid=4412, Ch 00000010, intr 10000000. MMU Fault\n")
    assert (ev.pid, ev.process_name, ev.message) == (4412, None, "Ch 00000010, intr 10000000. MMU Fault")


def test_aer_lines_are_not_gpu_events(real: Real) -> None:
    """dmesg-aer__amd-root-port-correctable-timeout-badtlp-gpu-fell-off-bus-popos3363__excerpt1.txt -
    https://github.com/pop-os/pop/issues/3363: syslog-prefixed correctable AER lines from the root port
    above the GPU; they parse as kernel lines and are no GPU event (the later fall is not in the excerpt)."""
    assert (
        parse(
            real(
                "dmesg-aer__amd-root-port-correctable-timeout-badtlp-gpu-fell-off-bus-popos3363__excerpt1.txt"
            )
        )
        == []
    )
