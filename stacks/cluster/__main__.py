"""The `cluster` stack: loads `clusterforge:spec`, plans it and declares the GpuCluster (docs/stacks.md)."""

from pathlib import Path

from clusterforge.pulumi.program import main

main(Path(__file__).resolve().parents[2])
