"""Cluster spec: schema, YAML loading with line numbers, SKU catalog, cross-field checks.

The names below load lazily: the light modules of this package (`netcatalog`, `doca`, `counter_policy`)
are read by the validators, which run on nodes too, and must not pay for (or need) the schema's imports
(pydantic)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusterforge.spec.load import Spec, load_spec, load_spec_text
    from clusterforge.spec.model import Cluster
    from clusterforge.spec.sku import Sku, catalog

_HOME = {
    "Spec": "load",
    "load_spec": "load",
    "load_spec_text": "load",
    "Cluster": "model",
    "Sku": "sku",
    "catalog": "sku",
}
__all__ = ["Cluster", "Sku", "Spec", "catalog", "load_spec", "load_spec_text"]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"clusterforge.spec.{_HOME[name]}"), name)
    raise AttributeError(f"module 'clusterforge.spec' has no attribute {name!r}")
