# On a fresh machine: `make study` (the whole mix-or-merge study on the embedded default),
# `make test` (the test suite), `make demo` (one quick SFT + GRPO run), `make real-smoke`
# (every stage on SmolLM2-135M-Instruct). Each creates .venv and
# installs on first use.
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.rlvr-installed
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
PYTEST := $(OFFLINE) WANDB_MODE=disabled $(BIN)/python -m pytest

help: ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /\1\t/' | expand -t 14

.PHONY: help setup study study-arms demo real-smoke real-study test test-fast test-slow lint bench clean

$(STAMP): pyproject.toml scripts/setup_env.sh
	bash scripts/setup_env.sh
	touch $(STAMP)

setup: $(STAMP) ## create .venv and install (CPU torch where no NVIDIA GPU)

study: $(STAMP) ## the whole mix-or-merge study on the embedded tiny model
	$(OFFLINE) $(BIN)/python -m rlvr.study experiment=tiny_study

# The arms beyond the paper (cascade, adaptive mixture) added to make study's folder
study-arms: $(STAMP) ## the arms beyond the paper, added to make study's folder
	$(OFFLINE) $(BIN)/python -m rlvr.study experiment=tiny_study_arms

demo: $(STAMP) ## one quick SFT + GRPO run (about 1.5 minutes)
	$(OFFLINE) $(BIN)/python -m rlvr.train experiment=demo

# Every stage of the study on a real pretrained model (SmolLM2-135M-Instruct from its wheel)
real-smoke: $(STAMP) ## every stage on SmolLM2-135M-Instruct, one step each
	$(OFFLINE) $(BIN)/python -m rlvr.study experiment=real_smoke_study

# Mix or merge on SmolLM2-135M-Instruct: instruction following and tool calls, two seeds
real-study: $(STAMP) ## mix or merge on SmolLM2-135M-Instruct
	$(OFFLINE) $(BIN)/python -m rlvr.study experiment=real_study

test: $(STAMP) ## the test suite: fast tier, then the slow tier (CPU, offline)
	$(PYTEST) -m "not slow and not gpu" -n 2 -q --durations=20
	$(PYTEST) -m "slow and not gpu" -q -p no:xdist --durations=25

test-fast: $(STAMP) ## the fast tier only
	$(PYTEST) -m "not slow and not gpu" -n 2 -q --durations=20

test-slow: $(STAMP) ## the slow tier only
	$(PYTEST) -m "slow and not gpu" -q -p no:xdist --durations=25

lint: $(STAMP) ## ruff check, ruff format --check, mypy on verifiers/ and tasks/ (CI runs it)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy verifiers tasks

# Every benchmark prints its ratio against a baseline measured in the same run, and peak RSS;
# the load average before and after says whether the machine was idle.
bench: $(STAMP) ## every benchmark against a baseline measured in the same run
	@echo "load average before: $$(cut -d' ' -f1-3 /proc/loadavg)"
	$(OFFLINE) $(BIN)/python scripts/bench_verifiers.py
	$(OFFLINE) $(BIN)/python scripts/bench_sandbox.py
	$(OFFLINE) $(BIN)/python scripts/bench_eval.py
	$(OFFLINE) $(BIN)/python scripts/bench_episodes.py
	$(OFFLINE) $(BIN)/python scripts/bench_grpo.py
	$(OFFLINE) $(BIN)/python scripts/bench_analyze.py --shape small
	$(OFFLINE) $(BIN)/python scripts/bench_stage_start.py
	$(OFFLINE) $(BIN)/python scripts/bench_plan.py
	@echo "load average after: $$(cut -d' ' -f1-3 /proc/loadavg)"

clean: ## remove .venv and run outputs
	rm -rf $(VENV) outputs multirun .pytest_cache
