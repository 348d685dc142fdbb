"""The version of the compiled desired state `plan/desired.py` writes into plan.json.

Its own module: `clusterforge.plan.expect` (read by every validator process, on the controller or on the
node) checks it without importing the compiler, whose imports (the spec models: pydantic) a node need not
have."""

from __future__ import annotations

DESIRED_VERSION = "clusterforge-desired/3"
