"""The kernel-modules check: every module of the desired state loaded now and listed for the next boot."""

from __future__ import annotations

import pytest

from clusterforge.certify.checks import CheckFailed
from clusterforge.plan.expect import NodeExpect

from .conftest import FakeNode, validator

mods = validator("modules")


def answers(node: NodeExpect, live: dict[str, str], boot: dict[str, str]) -> FakeNode:
    """A node whose /sys/module/<m>/initstate and boot files read as given (absent when not given)."""
    out = {}
    for m in node.desired["modules"]:
        out[mods.initstate(m)] = (0, live.get(m["name"], "absent") + "\n")
        out[mods.boot_list(m)] = (0, boot.get(m["boot_file"], "# absent\n"))
    return FakeNode(out)


def test_roce_node_needs_peermem_and_rdma_cm(roce_node: NodeExpect) -> None:
    names = [m["name"] for m in roce_node.desired["modules"]]
    assert names[:2] == ["nvidia_peermem", "rdma_cm"]
    files = {m["boot_file"]: f"# managed\nconfigfs\n{m['name']}\n" for m in roce_node.desired["modules"]}
    live = {m["name"]: "live" for m in roce_node.desired["modules"]}
    node = answers(roce_node, live, files)
    mods.test_resident(roce_node, node)
    assert sorted(node.asked) == sorted(mods.commands(roce_node))


def test_ib_node_has_no_rdma_cm(ib_node: NodeExpect) -> None:
    assert "rdma_cm" not in [m["name"] for m in ib_node.desired["modules"]]


def test_loaded_but_not_listed_for_boot_fails(roce_node: NodeExpect) -> None:
    """modprobe by hand passes today and is gone after a reboot: the check names the file."""
    live = {m["name"]: "live" for m in roce_node.desired["modules"]}
    peer = roce_node.desired["modules"][0]
    files = {m["boot_file"]: m["name"] + "\n" for m in roce_node.desired["modules"] if m is not peer}
    with pytest.raises(CheckFailed, match=rf"nvidia_peermem=not in {peer['boot_file']}") as err:
        mods.test_resident(roce_node, answers(roce_node, live, files))
    assert "--tags peermem" in err.value.fix


def test_listed_but_not_loaded_fails(roce_node: NodeExpect) -> None:
    files = {m["boot_file"]: m["name"] + "\n" for m in roce_node.desired["modules"]}
    live = {"nvidia_peermem": "live"}
    with pytest.raises(CheckFailed, match=r"rdma_cm=not loaded \(absent\)") as err:
        mods.test_resident(roce_node, answers(roce_node, live, files))
    assert "--tags roce_qos" in err.value.fix


def test_comments_do_not_count(roce_node: NodeExpect) -> None:
    assert mods.listed("# nvidia_peermem\n; rdma_cm\n  nvidia-fs \n") == {"nvidia_fs"}
