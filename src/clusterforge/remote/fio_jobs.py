"""fio command lines for the storage I/O measurements: one source of truth for the full tier
(validators/test_storage.py) and burn-in (`clusterforge.burnin.storage`).

``io`` is the desired storage's ``io_test`` (spec ``storage.io_test``: size_gib, runtime_s, checkpoint_gib).
Every value is an argv word (`clusterforge.remote.commands`): a mount point never becomes shell syntax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterforge.remote.commands import Word, argv, shell

FIO_JOBS = 4
#: what each fio measurement runs: (fio rw, block size, iodepth, the floor it is judged against)
FIO_KINDS: dict[str, tuple[str, str, int, str]] = {
    "seq_read": ("read", "1M", 16, "seq_read_gbs"),
    "seq_write": ("write", "1M", 16, "seq_write_gbs"),
    "randread": ("randread", "4k", 32, "randread_iops"),
}
#: `fio_cmd`'s exit status and stderr line when the target is not a mount point (fio did not run)
RC_NOT_MOUNTED = 3
NOT_MOUNTED = "not a mount point"


def fio_args(kind: str, io: Mapping[str, Any], direct: bool) -> list[Word]:
    """One fio measurement of ``kind`` (a `FIO_KINDS` key): `FIO_JOBS` jobs sharing ``size_gib``, time based
    for ``runtime_s``, reported as one group in JSON."""
    rw, bs, depth, _ = FIO_KINDS[kind]
    size_mib = max(64, int(float(io["size_gib"]) * 1024 / FIO_JOBS))
    return [
        f"--name=cf-fio-{kind}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--iodepth={depth}",
        "--ioengine=libaio",
        f"--direct={1 if direct else 0}",
        f"--numjobs={FIO_JOBS}",
        f"--size={size_mib}m",
        f"--runtime={int(io['runtime_s'])}",
        "--time_based",
        "--group_reporting",
        "--output-format=json",
    ]


def checkpoint_args(io: Mapping[str, Any]) -> list[Word]:
    """One checkpoint-sized file written as a framework saves one: buffered, then fsync (end_fsync: fio
    counts the final fsync in the job's time, axboe/fio#831)."""
    size_mib = max(64, int(float(io["checkpoint_gib"]) * 1024))
    return [
        "--name=cf-fio-checkpoint",
        "--rw=write",
        "--bs=16M",
        "--ioengine=psync",
        "--direct=0",
        "--end_fsync=1",
        "--numjobs=1",
        f"--size={size_mib}m",
        "--output-format=json",
    ]


def fio_cmd(target: str, args: list[Word]) -> str:
    """fio in a directory of its own under ``target`` when that is a mount point (never beneath an unmounted
    one: exit `RC_NOT_MOUNTED`), removed with its files whatever the outcome; ``fio --version`` first, so a
    missing fio is named (an error). Its own directory: on a shared filesystem every node measures at once,
    and fixed file names would be one node's files read, or removed, by another (fio job errors ENOENT,
    seen on the lab's JuiceFS)."""
    return (
        "fio --version >/dev/null && { "
        + shell("mountpoint -q {} || { echo 'not a mount point' >&2; exit 3; }; ", target)
        + shell("d=$(mktemp -d {}) || exit 4; ", f"{target}/.cf-fio-XXXXXXXX")
        + argv("fio", *args)
        + ' --directory="$d"; rc=$?; rm -rf -- "$d"; exit $rc; }'
    )


def fio_timeout(io: Mapping[str, Any], least: int = 0) -> int:
    """Seconds one `fio_args` run may take: twice its run time plus 10 minutes to lay out its files."""
    return max(least, int(io["runtime_s"]) * 2 + 600)
