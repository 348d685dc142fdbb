"""Certification: the validators' library (`checks`, `readers`, `fixes`, `batch`), the per-node validator
runner, results, certificates through the records. The flow that chains them: `clusterforge.flows.certify`."""
