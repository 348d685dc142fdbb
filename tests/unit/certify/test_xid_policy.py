"""The Xid policy (src/clusterforge/certify/xid_policy.yaml) on real kernel logs from tests/fixtures/real/.

Provenance of each capture is in tests/fixtures/real/SOURCES.md; the source is repeated beside each case.
"""

from __future__ import annotations

import pytest

from clusterforge.certify.xid import parse_policy, policy
from clusterforge.hw import xid as xid_log
from tests.conftest import REAL

# file -> (Xids that are fatal under the policy, Xids that are not, source)
CASES = {
    "xid__535.161-dmesg-T-xid79-fallen-off-bus-crashdump-akash209__7.txt": (
        {79},
        set(),
        "github.com/akash-network/support/issues/209: GPU fallen off the bus",
    ),
    "xid__b200-b300-dmesg-T-xid13-mmu-fault-esr-trtllm15610__9.txt": (
        set(),
        {13},
        "github.com/NVIDIA/TensorRT-LLM/issues/15610: MMU fault from a model (application)",
    ),
    "xid__blackwell-journal-xid45-caused-by-149-145-ogkm1150__8.txt": (
        {45},
        set(),
        "github.com/NVIDIA/open-gpu-kernel-modules/issues/1150: Xid 45 caused by NVLink Xids "
        "145/149, which no policy source classifies -> default fatal",
    ),
    "xid__gpu-node-dmesg-ctime-xid13-109-peermem-gpudpr46__10.txt": (
        set(),
        {13, 109},
        "github.com/leptonai/gpud/pull/46: Xid 13 (application) and 109 (warn)",
    ),
    "xid__gpu-xid119-gsp-timeout-gpud__2.txt": (
        {119},
        set(),
        "leptonai/gpud@d5ea0d8 pkg/nvidia-query/xid/testdata/dmesg-with-xid-119.log: GSP timeout",
    ),
    "xid__gpu-xid48-63-94-dbe-rowremap-gpud__3.txt": (
        {48},
        {63, 94},
        "leptonai/gpud@45e106f pkg/dmesg/testdata/dmesg-time-format-iso.log: DBE -> row remap",
    ),
    "xid__h100-gke-a3-nvrm-no-xid-elideng__nvrm1.txt": (
        set(),
        set(),
        "elideng assets/lab-14/dmesg_nvrm.txt: NVRM noise, no Xid",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_logs(name: str) -> None:
    path = REAL / name
    assert path.is_file(), f"real fixture {name} missing from {REAL}"
    fatal_want, other_want, _source = CASES[name]
    events = xid_log.parse(path.read_text())
    pol = policy()
    fatal = {e.xid for e in events if pol.classify(e).effective == "fatal"}
    other = {e.xid for e in events if pol.classify(e).effective != "fatal"}
    assert (fatal, other) == (fatal_want, other_want)


def test_sources_disagree_and_each_choice_is_recorded() -> None:
    pol = policy()
    azure_fatal = {48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120}
    k8s_app = {13, 31, 43, 45, 68}
    # Azure NHC calls 63/68/92 fatal; the policy follows GCM / k8s-dp there and says why.
    for x in (63, 68, 92):
        assert pol.rules[x].cls == "warn" and pol.rules[x].decision
    assert azure_fatal - {63, 68, 92} <= pol.of_class("fatal")
    assert k8s_app - {68} <= pol.of_class("application")
    assert pol.classify_code(999) == "fatal"  # unknown Xids fail closed
    assert all(set(r.sources) <= set(pol.sources) for r in pol.rules.values())


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"default": "ignore", "sources": {}, "entries": []}, "default must be"),
        (
            {
                "default": "fatal",
                "sources": {"a": "x"},
                "entries": [{"xid": 1, "class": "bad", "sources": ["a"]}],
            },
            "unknown class",
        ),
        (
            {
                "default": "fatal",
                "sources": {"a": "x"},
                "entries": [
                    {"xid": 1, "class": "warn", "sources": ["a"]},
                    {"xid": 1, "class": "warn", "sources": ["a"]},
                ],
            },
            "listed twice",
        ),
        (
            {
                "default": "fatal",
                "sources": {"a": "x"},
                "entries": [{"xid": 1, "class": "warn", "sources": ["b"]}],
            },
            "must name sources",
        ),
    ],
)
def test_policy_validation(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_policy(doc)
