# Copyright: clusterforge contributors
# Apache-2.0
"""Kernel command line comparison shared by the filters (controller) and modules (node)."""

from __future__ import annotations

# Parameters that may legitimately appear several times (one hugepagesz/hugepages pair per page size).
MULTI_VALUED = frozenset({"hugepagesz", "hugepages"})


def tokens(cmdline):
    if cmdline is None:
        return []
    if isinstance(cmdline, (list, tuple)):
        out = []
        for t in cmdline:
            out.extend(str(t).split())
        return out
    return str(cmdline).split()


def key(token):
    return token.split("=", 1)[0]


def missing(current, desired):
    """Desired parameters not in effect in ``current``.

    A single-valued parameter is in effect when its *last* occurrence has the desired value (the kernel
    applies parameters in order). ``hugepagesz=X hugepages=N`` pairs must appear as an adjacent pair;
    other repeats of ``hugepages``/``hugepagesz`` must simply be present.
    """
    cur = tokens(current)
    want = tokens(desired)
    last = {}
    for tok in cur:
        last[key(tok)] = tok
    out = []
    i = 0
    while i < len(want):
        tok = want[i]
        k = key(tok)
        if k == "hugepagesz" and i + 1 < len(want) and key(want[i + 1]) == "hugepages":
            pair = (tok, want[i + 1])
            if not any((cur[j], cur[j + 1]) == pair for j in range(len(cur) - 1)):
                out.extend(pair)
            i += 2
            continue
        if k in MULTI_VALUED:
            if tok not in cur:
                out.append(tok)
        elif last.get(k) != tok:
            out.append(tok)
        i += 1
    return out


def stale(current, desired, managed_keys):
    """Parameters in ``current`` with a managed key that the desired set does not contain.

    Single-valued keys are stale only when the desired set has no value for the key at all (a different
    value is reported by ``missing``); repeated keys (hugepages) are stale when the exact token is not desired.
    """
    cur = tokens(current)
    want = set(tokens(desired))
    want_keys = {key(t) for t in want}
    managed = set(managed_keys or [])
    out = []
    for tok in cur:
        k = key(tok)
        if k not in managed or tok in out:
            continue
        if k in MULTI_VALUED:
            if tok not in want:
                out.append(tok)
        elif k not in want_keys:
            out.append(tok)
    return out


def expected(current, desired, managed_keys):
    """What ``current`` looks like once the desired parameters are applied (for diffs)."""
    drop = set(stale(current, desired, managed_keys))
    want = tokens(desired)
    want_single = {key(t) for t in want if key(t) not in MULTI_VALUED}
    kept = [t for t in tokens(current) if t not in drop and key(t) not in want_single and t not in want]
    return " ".join(kept + want)
