"""clusterforge: describe, plan, provision, certify and keep true a GPU training cluster."""

__version__ = "0.1.0"
