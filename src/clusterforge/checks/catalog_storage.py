"""The storage validators' registry entries (validators/test_storage.py; issue 22)."""

from __future__ import annotations

from functools import partial

from clusterforge.checks.model import Check, validator_check

_FULL = ("full", "burnin")
_REPROVISION = "re-provision the node (`clusterforge provision --tags storage --limit NODE`), then re-certify"


_s = partial(validator_check, fix=_REPROVISION)


STORAGE: tuple[Check, ...] = (
    _s(
        "storage.mounts",
        "every declared shared filesystem mounted with its type and options",
        severity="critical",
    ),
    _s(
        "storage.writable",
        "a test file can be written and removed under every storage mount",
        severity="critical",
    ),
    _s(
        "storage.free_space",
        "free space on every storage target above its min_free_gib floor",
        fix="free space on the filesystem or grow it, then re-certify",
    ),
    _s(
        "storage.scratch",
        "scratch assembled from the declared devices, formatted and mounted",
        remedies=("service",),
    ),
    _s(
        "storage.nics",
        "storage NICs up at their speed and MTU",
        remedies=("service",),
        ticket="cable",
        fix="check the cable, transceiver and switch port; re-provision for the MTU",
    ),
    _s(
        "storage.nic_qos",
        "lossless storage NICs: the rails' RoCE trust, PFC, DSCP->priority and ECN (mlnx_qos or dcb)",
    ),
    _s("storage.lnet", "LNet on the declared networks (Lustre)"),
    _s("storage.gds", "GPUDirect Storage as declared (nvidia_fs, gdscheck -p)"),
    _s(
        "storage.fio",
        "fio sequential read/write and random-read IOPS above the floors on scratch and shared filesystems",
        tiers=_FULL,
        cost="moderate",
        remedies=("service",),
        fix="re-run in a quiet window; if it stays low, check the devices, RAID members, network and servers",
    ),
    _s(
        "storage.checkpoint",
        "a checkpoint-sized file written and fsynced above the checkpoint floor",
        tiers=_FULL,
        cost="moderate",
        fix="re-run in a quiet window; if it stays low, check the checkpoint tier's devices and servers",
    ),
)
