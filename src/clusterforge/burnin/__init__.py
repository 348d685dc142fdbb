"""Burn-in: repeated full-tier performance tests and multi-node tests on drained nodes, fleet statistics,
localisation of what is wrong, reports, `burnin` certificates (docs/burnin.md).

Pure parts: `pairs` (which pairs and groups cover every leaf and cable), `analysis` (robust statistics,
counter growth, pair localisation), `verdicts` (findings per node). I/O: `suite` and `execute` (commands on
the nodes), `db` (burn-in tables in the records database), `runner`, `issue` (records, certificates, pool),
`report` and `plots`, `cli`.
"""
