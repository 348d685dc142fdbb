"""Cluster spec: schema, YAML loading with line numbers, SKU catalog, cross-field checks."""

from clusterforge.spec.load import Spec, load_spec, load_spec_text
from clusterforge.spec.model import Cluster
from clusterforge.spec.sku import Sku, catalog

__all__ = ["Cluster", "Sku", "Spec", "catalog", "load_spec", "load_spec_text"]
