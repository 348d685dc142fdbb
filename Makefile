# clusterforge - run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= inventory/clusters/lab.yaml
CLUSTER ?= $(basename $(notdir $(SPEC)))
PYTEST_ARGS ?=
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: help venv system-deps collections plan test test-unit lint provision certify burnin drift up lab-up lab-down bench bench-quick clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "clusterforge targets (SPEC=$(SPEC)):\n"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/.installed ## Create the Python venv with every dependency (idempotent)

system-deps: ## Install the Debian packages the lab needs (apt-get, as root)
	bash scripts/install-system-deps.sh

collections: venv ## Extract the Ansible collections we use from the PyPI `ansible` wheel
	bash scripts/install-collections.sh

plan: venv ## Validate SPEC and write inventory/generated/<cluster>/
	$(BIN)/clusterforge plan $(SPEC)

provision: venv system-deps collections ## Lab up -> plan -> provision -> quick certification -> admit (SPEC; INVENTORY_FROM=stack)
ifeq ($(INVENTORY_FROM),stack)
	$(BIN)/clusterforge inventory from-stack --stack $(CLUSTER)
	$(BIN)/clusterforge provision $(SPEC) --certify --inventory inventory/generated/$(CLUSTER)
else
	$(BIN)/clusterforge provision $(SPEC) --certify
endif

certify: venv ## Certify nodes of SPEC (TIER=quick|full)
	$(BIN)/clusterforge certify $(SPEC) --tier $(or $(TIER),quick)

burnin: venv ## Burn-in run on drained nodes of SPEC
	$(BIN)/clusterforge burnin $(SPEC) --iterations $(or $(ITERATIONS),3)

drift: venv collections ## Compare every node with the declared state (exit 3 on drift)
	$(BIN)/clusterforge drift $(SPEC) $(DRIFT_ARGS)

up: ## pulumi up in stacks/cluster (needs the Pulumi CLI)
	@if command -v pulumi >/dev/null; then cd stacks/cluster && pulumi up; else \
	  echo "The Pulumi CLI is not installed: see https://www.pulumi.com/docs/install/ ."; \
	  echo "Without it, 'clusterforge lab up' stands up the lab part."; exit 1; fi

lab-up: venv system-deps ## Stand up the local lab of SPEC
	$(BIN)/clusterforge lab up $(SPEC)

lab-down: venv ## Remove everything the lab created
	$(BIN)/clusterforge lab down $(SPEC)

test: venv system-deps collections ## Run every test (unit on every core, then the lab suite in one process); what CI runs
	rc=0; \
	$(BIN)/python -m pytest tests/unit -n auto $(PYTEST_ARGS) || rc=$$?; \
	$(BIN)/python -m pytest tests/integration $(PYTEST_ARGS) || rc=$$?; \
	exit $$rc

test-unit: venv ## Unit tests only (no lab)
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

lint: venv collections ## ruff, mypy, import contracts (lint-imports), ansible-lint (production, offline)
	$(BIN)/ruff check src tests stacks bench validators
	$(BIN)/ruff format --check src tests stacks bench validators
	$(BIN)/mypy
	$(BIN)/lint-imports
	cd playbooks && ../$(BIN)/ansible-lint --offline --profile production

bench: venv ## Every stage at every size the scale issue names (~1.5 h on 2 cores, root); bench/results.json
	$(BIN)/python bench/run.py --full

bench-quick: venv ## The short subset: plan 1k/10k and the 4-node lab stages (~15 min)
	$(BIN)/python bench/run.py --quick

clean: ## Remove generated files and caches (not the lab image cache)
	rm -rf inventory/generated .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
