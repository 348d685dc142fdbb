"""Command lines for the nodes, built in ONE place so that values are always data.

Remote commands reach a shell (ssh, the validators' batched read script, burn-in's per-node script), so a
command is shell text; it is built here and nowhere else, from

- :func:`argv` — a plain command: every word quoted (``shlex.join``), a value can never become syntax;
- :func:`shell` — a fixed snippet written in this code base (redirections, ``||``, ``$(...)``) whose
  ``{}`` holes each take one value, quoted;
- :func:`under` — a path glob: the directory (a value) quoted, the fixed pattern after it left for the
  shell to expand.

Validators and burn-in never put a value into shell text themselves;
``tests/unit/validators/test_values_are_data.py`` feeds metacharacter-laden values through every builder and
checks the source for f-strings handed to the probe.
"""

from __future__ import annotations

import re
import shlex

Word = str | int

RC_SSH = 255  # ssh's own failure; a remote command's 255 is passed back as RC_REMOTE_255
RC_REMOTE_255 = 250

#: characters a fixed glob pattern may hold (no quotes, spaces, `$`, `;`, backticks …)
_GLOB = re.compile(r"[A-Za-z0-9_.*?\[\]/-]+")
HOLE = "{}"


def argv(*words: Word) -> str:
    """``argv("mlnx_qos", "-i", netdev)`` → ``mlnx_qos -i 'the netdev'``: each word exactly one argument."""
    if not words:
        raise ValueError("argv: empty command")
    return shlex.join(_word(w) for w in words)


def shell(template: str, *values: Word) -> str:
    """A fixed shell snippet with one ``{}`` hole per value; each value is inserted quoted.

    ``shell("cat {} 2>/dev/null || echo unset", path)``. The template is code, never data: it is
    written in this code base as a literal."""
    parts = template.split(HOLE)
    if len(parts) != len(values) + 1:
        raise ValueError(f"shell: {len(parts) - 1} holes for {len(values)} values in {template!r}")
    out = [parts[0]]
    for value, rest in zip(values, parts[1:], strict=True):
        out += [shlex.quote(_word(value)), rest]
    return "".join(out)


def under(base: str, pattern: str) -> str:
    """``base`` (a value, quoted) joined with a fixed glob ``pattern`` (expanded by the shell):
    ``under("/sys/class/infiniband/mlx5_0/ports/1", "counters/*")``."""
    if not _GLOB.fullmatch(pattern) or pattern.startswith("/"):
        raise ValueError(f"under: not a fixed relative glob pattern: {pattern!r}")
    return f"{shlex.quote(base.rstrip('/') or '/')}/{pattern}"


def _word(value: Word) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"a command word must be str or int, not {type(value).__name__}")
    text = str(value)
    if "\0" in text:
        raise ValueError(f"a command word cannot hold a NUL byte: {text!r}")
    return text


def read_cmd(path: str) -> str:
    """One file's content (:meth:`clusterforge.certify.checks.Probe.read`)."""
    return argv("cat", path)


def read_many_cmd(base: str, pattern: str) -> str:
    """First line of every file ``pattern`` matches under ``base``, as ``path:line`` (``grep -H``)."""
    return "grep -H -m1 '' " + under(base, pattern)


#: the line closing each netdev's part of :func:`ethtool_stats_cmd`'s output, then ethtool's exit code
ETHTOOL_END = "@@clusterforge ethtool -S exit "


def ethtool_stats_cmd(netdevs: list[str]) -> str:
    """``ethtool -S`` of every netdev in ONE command, in the order given: each one's output (stdout and
    stderr) then a line ``ETHTOOL_END<exit code>``. The netdevs are values (quoted); the loop is fixed
    text."""
    if not netdevs:
        raise ValueError("ethtool_stats_cmd: no netdev")
    words = " ".join(shlex.quote(_word(n)) for n in netdevs)
    return (
        f'for d in {words}; do ethtool -S "$d" 2>&1; '
        f"printf '\\n%s%s\\n' {shlex.quote(ETHTOOL_END)} \"$?\"; done"
    )


def wrap(command: str, timeout: int) -> str:
    """The remote form: C locale, `timeout` with a hard kill 2 s later."""
    return (
        f"LC_ALL=C timeout -k 2 {int(timeout)} sh -c {shlex.quote(command)}; "
        f"r=$?; [ $r -ne {RC_SSH} ] || r={RC_REMOTE_255}; exit $r"
    )
