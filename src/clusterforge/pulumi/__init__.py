"""Pulumi components for a GPU cluster (GpuCluster, NodePool, GpuNode, ComputeFabric, FabricSwitch,
StorageNetwork, ManagementNetwork), the `cluster` stack program, and `clusterforge inventory from-stack`.

Importing this package does not import Pulumi's SDK; the modules that need it do.
"""
