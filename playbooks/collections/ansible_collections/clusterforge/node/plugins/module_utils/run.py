# Copyright: clusterforge contributors
# Apache-2.0
"""Run a command with a hard timeout (the whole process group is killed when it expires)."""

from __future__ import annotations

import os
import signal
import subprocess

C_ENV = {"LC_ALL": "C", "LANG": "C"}


class CommandTimeout(Exception):
    def __init__(self, argv, timeout):
        super().__init__("command timed out after %ss: %s" % (timeout, " ".join(argv)))
        self.argv = argv
        self.timeout = timeout


def run_cmd(argv, timeout, env_update=None):
    """Run argv (a list, no shell) and return (rc, stdout, stderr) as text.

    Raises CommandTimeout when the command runs longer than ``timeout`` seconds, and
    OSError (e.g. FileNotFoundError) when it cannot be started.
    """
    env = dict(os.environ)
    env.update(C_ENV)
    if env_update:
        env.update(env_update)
    proc = subprocess.Popen(
        [str(a) for a in argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise CommandTimeout([str(a) for a in argv], timeout)
    return (
        proc.returncode,
        out.decode("utf-8", errors="replace"),
        err.decode("utf-8", errors="replace"),
    )
