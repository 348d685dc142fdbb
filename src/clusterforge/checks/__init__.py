"""The check registry: every validator, burn-in test and passive check, with severity, cost and the action
on failure (`catalog`), the window/repeat rules (`rules.decide`), and docs/checks.md (`docs.render`)."""

from clusterforge.checks.model import ACTIONS, Check, Rule
from clusterforge.checks.registry import base_id, by_id, get, xid_check
from clusterforge.checks.rules import Decision, Event, decide

__all__ = ["ACTIONS", "Check", "Decision", "Event", "Rule", "base_id", "by_id", "decide", "get", "xid_check"]
