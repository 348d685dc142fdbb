"""The flows: what a command does, chaining the stages and the plan's deployment target.

    plan       spec → plan → inventory (with the target's variables)        flows.plan
    provision  plan → target.prepare → rolling site.yml (pool drain/resume)    flows.provision
    certify    plan → validators per node → records, certificates → admit      flows.certify, flows.admit
    drift      plan → check-mode site.yml + quick validators → report (→ fix)  flows.drift
    burn-in    plan → drain → iterations → verdicts → certificates → pool      flows.burnin

Stages (run, certify, drift, burnin, pool, lab, ...) never import one another; only a flow combines them
(see docs/architecture.md and the import-linter contracts in pyproject.toml).
"""
