"""The `cluster` stack: loads `clusterforge:spec`, plans it and declares the GpuCluster (docs/stacks.md)."""

from pathlib import Path

from clusterforge.extras import require

require("pulumi", "the Pulumi program (stacks/cluster)")  # one clear line when the extra is missing

from clusterforge.pulumi.program import main  # noqa: E402  (after the check, on purpose)

main(Path(__file__).resolve().parents[2])
