"""The naive baseline runner environment, for benchmarks only: Ansible's own defaults.

`clusterforge.run.ansible.runner_env` tunes Ansible (pipelining, ControlPersist, a JSON fact cache with
smart gathering, forks sized from the batch). To measure what that buys, `naive_env` gives the same
environment with every one of those set back to what a bare `ansible-playbook` does: forks 5, no
pipelining, no SSH connection multiplexing (each task opens its own SSH connection), no fact cache and
facts gathered on every play, and the stock `linear` strategy (no Mitogen). The project's ansible.cfg
sets pipelining, ControlPersist and forks too, so the environment variables (which win over ansible.cfg)
are set explicitly rather than left out.

`naive_runner()` swaps it in for `run_playbook` (which builds its environment from
`clusterforge.run.ansible.runner_env` at call time) for the duration of a `with` block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from clusterforge.run import ansible
from clusterforge.run.ansible import runner_env as tuned_env

ANSIBLE_DEFAULT_FORKS = 5

#: what the naive variant sets on top of the tuned environment (the tuned keys it replaces, and more)
NAIVE_OVERRIDES: dict[str, str] = {
    "ANSIBLE_FORKS": str(ANSIBLE_DEFAULT_FORKS),
    "ANSIBLE_PIPELINING": "False",
    # no ControlMaster/ControlPersist: a new SSH connection (key exchange, login) per task and host
    "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o ControlPath=none -o ServerAliveInterval=15",
    "ANSIBLE_GATHERING": "implicit",
    "ANSIBLE_CACHE_PLUGIN": "memory",
    "ANSIBLE_STRATEGY": "linear",
}

#: tuned-only keys the naive variant removes (they only configure the fact cache it no longer uses)
NAIVE_REMOVED = (
    "ANSIBLE_CACHE_PLUGIN_CONNECTION",
    "ANSIBLE_CACHE_PLUGIN_TIMEOUT",
    "ANSIBLE_STRATEGY_PLUGINS",
)


def naive_env(forks: int | None = None) -> dict[str, str]:
    """`runner_env` with Ansible's defaults: forks 5, no pipelining, no ControlPersist, no fact cache, the
    stock linear strategy.

    `forks` is accepted (same signature as `runner_env`) and ignored: the baseline always runs 5."""
    del forks
    env = {k: v for k, v in tuned_env().items() if k not in NAIVE_REMOVED}
    env.update(NAIVE_OVERRIDES)
    return env


@contextlib.contextmanager
def _runner_env_swapped(env_fn: Callable[[int | None], dict[str, str]]) -> Iterator[None]:
    tuned = ansible.runner_env
    ansible.runner_env = env_fn  # type: ignore[assignment]
    try:
        yield
    finally:
        ansible.runner_env = tuned


def naive_runner() -> contextlib.AbstractContextManager[None]:
    """Within the block, `run_playbook` runs with `naive_env` (restored on exit, also on error)."""
    return _runner_env_swapped(naive_env)


def stock_env(forks: int | None = None) -> dict[str, str]:
    """The tuned environment on stock Ansible (pipelining, ControlPersist, fact cache; `linear`, no
    Mitogen): the bench's middle variant, so each tuning's share of the gain is measured."""
    return tuned_env(forks, strategy="linear")


def stock_runner() -> contextlib.AbstractContextManager[None]:
    """Within the block, `run_playbook` runs with `stock_env` (restored on exit, also on error)."""
    return _runner_env_swapped(stock_env)
