# ragline — two commands on a fresh machine: `make up` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the `torch` extra on top (sentence-transformers: the torch backend, reranking, the live
# reference of the ONNX artifact); `make test` installs it, `make install`/`make up` do not
TORCH_STAMP := $(VENV)/.installed-torch
# pytest-xdist workers for tests/unit (`make test`, `make test-unit`); 0 runs them in-process
UNIT_WORKERS ?= 2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: help system-deps install install-torch up down console status test test-unit test-integration test-torch soak chaos spaces-gate fuzz-api canary-soak lint typecheck fmt schemas bench bench-growth eval eval-scifact eval-paraphrase eval-answerability answerability-fit relevance-probe clean

help:
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml constraints.txt clients/python/pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# the lean set: no torch (README "Install size"); the model's files are fetched and
	@# checked on first use (ragline.text.model_files), the ONNX artifact built from them
	@# the client distribution (the API models' one home) in the same resolve, so the
	@# `ragline-client` requirement is met by this checkout, never looked up on an index
	$(BIN)/pip install -q -c constraints.txt -e './clients/python[langchain,llamaindex]' -e '.[local,eval,dev]'
	@touch $(STAMP)

# what the engines and the browser tests need from the machine: Java 17+ and Maven (the
# local Kafka and OpenSearch are Maven-fetched JVM engines) and Chromium (the console's
# headless browser tests). Installed with apt when missing and root; else says what to do.
system-deps:
	@missing=""; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v mvn >/dev/null 2>&1 || missing="$$missing maven"; \
	if [ -n "$(NEED_CHROMIUM)" ] && [ ! -x /usr/bin/chromium ]; then missing="$$missing chromium"; fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing (apt)"; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	  else echo "missing system packages:$$missing (install them, e.g. apt-get install$$missing)"; exit 1; fi; \
	fi

install: $(STAMP) ## create .venv and install the lean set (core + local stack + eval + dev extras, no torch)

$(TORCH_STAMP): $(STAMP)
	$(BIN)/pip install -q -c constraints.txt -e './clients/python[langchain,llamaindex]' -e '.[torch,local,eval,dev]'
	@touch $(TORCH_STAMP)

install-torch: $(TORCH_STAMP) ## add the torch extra (torch backend, reranking, the live reference tests)

up: system-deps install ## start the stack + all services, ingest examples/, run a sample query
	$(BIN)/ragline up

down: ## stop services and the stack
	@test -x $(BIN)/ragline && $(BIN)/ragline down || true

console: install ## the operator console on http://127.0.0.1:8085/console (sign in: ragline token --admin '*')
	$(BIN)/ragline console

status: install ## health of every component and service
	$(BIN)/ragline stack status; $(BIN)/ragline services status

# `make test` runs the torch-marked tests too (RAGLINE_REQUIRE_TORCH: a missing torch
# fails them instead of skipping), so the default onnx-int8 path and the torch backend
# are both proven on every run
test: NEED_CHROMIUM = 1
test: system-deps install-torch lint ## lint + the whole suite (unit, integration, e2e on the real stack; torch extra included)
	@# the unit tests (pure logic, no services) in $(UNIT_WORKERS) workers (pytest-xdist), then
	@# the rest in one process; e2e last: its session-scoped pipeline of service processes
	@# must not consume other tests' events. Both runs always run; either failing fails.
	@rc=0; export RAGLINE_REQUIRE_TORCH=1; \
	$(BIN)/pytest -q -p no:cacheprovider --timeout=600 -n $(UNIT_WORKERS) tests/unit || rc=1; \
	$(BIN)/pytest -q -p no:cacheprovider --timeout=600 --durations=25 tests/integration tests/e2e || rc=1; \
	exit $$rc

test-unit: install
	$(BIN)/pytest -q -p no:cacheprovider -n $(UNIT_WORKERS) -m "not integration and not e2e" tests/unit

test-integration: install
	$(BIN)/pytest -q --timeout=600 tests/integration tests/e2e

test-torch: install-torch ## the torch backend, reranking and the live sentence-transformers reference of the ONNX artifact
	RAGLINE_REQUIRE_TORCH=1 $(BIN)/pytest -q -p no:cacheprovider --timeout=600 -m torch tests/unit tests/integration

soak: install ## lifecycle state machine, long run (RAGLINE_LIFECYCLE_EXAMPLES, default 200)
	RAGLINE_LIFECYCLE_EXAMPLES=$${RAGLINE_LIFECYCLE_EXAMPLES:-200} \
	  $(BIN)/pytest -q -s -p no:cacheprovider --timeout=0 tests/integration/lifecycle/test_lifecycle_machine.py

chaos: install ## 2 replicas per consumer, SIGKILLs, stores vs a fault-free run (RAGLINE_CHAOS_DOCS, default 1000)
	RAGLINE_CHAOS=1 $(BIN)/pytest -q -s -p no:cacheprovider --timeout=0 tests/chaos

spaces-gate: install ## embedding spaces end to end: create, backfill, eval, gate refuses/promotes, rollback, retire (CLI + query service)
	RAGLINE_SPACES_GATE=1 $(BIN)/pytest -q -p no:cacheprovider --timeout=1800 tests/integration/spaces/test_spaces_gate.py

canary-soak: install ## issue 31: the leak property test with many examples, then the canary N times in a row
	RAGLINE_LEAK_EXAMPLES=$${RAGLINE_LEAK_EXAMPLES:-300} $(BIN)/pytest -q -p no:cacheprovider \
		--timeout=0 tests/unit/scanning/test_leak_property.py
	@n=$${RAGLINE_CANARY_RUNS:-20}; clean=0; for i in $$(seq 1 $$n); do \
		if $(BIN)/pytest -q -p no:cacheprovider --timeout=1800 tests/e2e/test_canary.py; \
		then clean=$$((clean + 1)); fi; echo "canary run $$i: $$clean clean so far"; done; \
	echo "canary: $$clean of $$n runs clean"; test $$clean -eq $$n

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

bench: install-torch ## benchmarks (torch rows included: the torch extra): prints numbers, writes bench/out/*.json and plots
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

eval: install ## both committed-baseline golden sets through a private stack + every service, all modes, before/after the baselines
	$(BIN)/ragline eval --dataset golden:tests/golden --dataset golden:tests/golden_marine --private-stack \
		--baseline-dir $(EVAL_BASELINES) $(EVAL_SAVE)

eval-scifact: install ## SciFact (train) through the pipeline, every mode, before/after its baseline
	$(BIN)/python bench/eval_scifact.py --baseline $(EVAL_BASELINES)/beir-scifact-train.json $(EVAL_SAVE)

eval-paraphrase: install ## fusion on paraphrases (issue 37): SciFact through a private stack, hybrid, then both generated paraphrase sets (length-preserving and deletion) through both legs and every fusion: bench/out/scifact/paraphrase/report.txt
	$(BIN)/python bench/eval_scifact.py --modes hybrid --paraphrase

ANSWERABILITY_OUT ?= bench/out/answerability/run
eval-answerability: install ## the answerability benchmark (SciFact by construction, docs/evaluation.md) through a private stack: held-out abstention figures
	$(BIN)/ragline eval --dataset answerability:scifact --private-stack --modes hybrid --top-k 10 \
		--out $(ANSWERABILITY_OUT)

answerability-fit: eval-answerability ## refit the answerability model (after an embedder change): writes libs/ragline/retrieval/answerability_model.json and docs/img/answerability-reliability.png
	$(BIN)/python bench/fit_answerability.py --report $(ANSWERABILITY_OUT)/report.json --write

relevance-probe: install-torch ## issue 32 probe: fine-tune a MiniLM-L6 cross-encoder on the answerability benchmark's fit half, AUC visible vs hidden on the held-out half (docs/evaluation.md "A relevance model trained here"; ~40 min on 2 cores)
	nice -n 10 $(BIN)/python bench/relevance_probe.py --epochs 2 --lr 1e-4 --out bench/out/relevance_probe/lr1e-4

clean: down
	rm -rf .ragline
