"""clusterforge's own Prometheus metrics (docs/metrics.md): computed from the records database (`collect`),
rendered in the text exposition format (`exposition`), written for node-exporter's textfile collector or
served on /metrics (`exporter`)."""
