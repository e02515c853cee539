# ragline — two commands on a fresh machine: `make up` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers for tests/unit (`make test`, `make test-unit`); 0 runs them in-process
UNIT_WORKERS ?= 2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: help install up down status test test-unit test-integration soak chaos spaces-gate fuzz-api lint typecheck fmt schemas bench bench-growth eval eval-scifact clean

help:
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml constraints.txt clients/python/pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# the CPU build of torch first, or pip pulls a multi-GB CUDA build
	$(BIN)/pip install -q -c constraints.txt torch
	@# the client distribution (the API models' one home) in the same resolve, so the
	@# `ragline-client` requirement is met by this checkout, never looked up on an index
	$(BIN)/pip install -q -c constraints.txt -e './clients/python[langchain,llamaindex]' -e '.[local,eval,dev]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install everything (core + local stack + eval + dev extras)

up: install ## start the stack + all services, ingest examples/, run a sample query
	$(BIN)/ragline up

down: ## stop services and the stack
	@test -x $(BIN)/ragline && $(BIN)/ragline down || true

status: install ## health of every component and service
	$(BIN)/ragline stack status; $(BIN)/ragline services status

test: install lint ## lint + the whole suite (unit, integration, e2e on the real stack)
	@# the unit tests (pure logic, no services) in $(UNIT_WORKERS) workers (pytest-xdist), then
	@# the rest in one process; e2e last: its session-scoped pipeline of service processes
	@# must not consume other tests' events. Both runs always run; either failing fails.
	@rc=0; \
	$(BIN)/pytest -q -p no:cacheprovider --timeout=600 -n $(UNIT_WORKERS) tests/unit || rc=1; \
	$(BIN)/pytest -q -p no:cacheprovider --timeout=600 tests/integration tests/e2e || rc=1; \
	exit $$rc

test-unit: install
	$(BIN)/pytest -q -p no:cacheprovider -n $(UNIT_WORKERS) -m "not integration and not e2e" tests/unit

test-integration: install
	$(BIN)/pytest -q --timeout=600 tests/integration tests/e2e

soak: install ## lifecycle state machine, long run (RAGLINE_LIFECYCLE_EXAMPLES, default 200)
	RAGLINE_LIFECYCLE_EXAMPLES=$${RAGLINE_LIFECYCLE_EXAMPLES:-200} \
	  $(BIN)/pytest -q -s -p no:cacheprovider --timeout=0 tests/integration/lifecycle/test_lifecycle_machine.py

chaos: install ## 2 replicas per consumer, SIGKILLs, stores vs a fault-free run (RAGLINE_CHAOS_DOCS, default 1000)
	RAGLINE_CHAOS=1 $(BIN)/pytest -q -s -p no:cacheprovider --timeout=0 tests/chaos

spaces-gate: install ## embedding spaces end to end: create, backfill, eval, gate refuses/promotes, rollback, retire (CLI + query service)
	RAGLINE_SPACES_GATE=1 $(BIN)/pytest -q -p no:cacheprovider --timeout=1800 tests/integration/spaces/test_spaces_gate.py

fuzz-api: install ## schemathesis, every check, a long run against a real query service
	RAGLINE_FUZZ_EXAMPLES=$${RAGLINE_FUZZ_EXAMPLES:-500} $(BIN)/pytest -q -p no:cacheprovider \
		--timeout=3600 tests/integration/query/test_openapi_fuzz.py

lint: install ## ruff + mypy + the layer contracts (import-linter, pyproject.toml)
	$(BIN)/ruff check libs services tests bench clients
	$(BIN)/mypy libs services clients/python/src
	$(BIN)/lint-imports

fmt: install
	$(BIN)/ruff format libs services tests bench clients
	$(BIN)/ruff check --fix libs services tests bench clients

schemas: install ## regenerate schemas/ and docs/asyncapi.json from the event models
	$(BIN)/ragline schemas

bench: install ## benchmarks: prints numbers, writes bench/out/*.json and plots
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

# GROWTH_SIZES=10000,100000 for a shorter run; the steps already measured stay in
# bench/out/growth.json if a later one is stopped
GROWTH_SIZES ?= 10000,100000,1000000
bench-growth: install ## query latency, load rate, index size, node RSS at 10k/100k/1M SYNTHETIC chunks (written straight into both stores)
	$(BIN)/python bench/growth_bench.py --load direct --text scifact --sizes $(GROWTH_SIZES) $(GROWTH_ARGS)

# the committed baselines (slim summaries, <dir>/<dataset>.json) `make eval` and `make
# eval-scifact` print before | after | delta against; SAVE_BASELINE=1 makes this run the
# new baseline (review the diff, then commit it)
EVAL_BASELINES ?= bench/baselines
EVAL_SAVE = $(if $(SAVE_BASELINE),--save-baseline $(EVAL_BASELINES))

eval: install ## both golden sets through a private stack + every service, all modes, before/after the baselines
	$(BIN)/ragline eval --dataset golden:tests/golden --dataset golden:tests/golden_marine --private-stack \
		--baseline-dir $(EVAL_BASELINES) $(EVAL_SAVE)

eval-scifact: install ## SciFact (train) through the pipeline, every mode, before/after its baseline
	$(BIN)/python bench/eval_scifact.py --baseline $(EVAL_BASELINES)/beir-scifact-train.json $(EVAL_SAVE)

clean: down
	rm -rf .ragline
