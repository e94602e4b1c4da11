# The two commands a newcomer needs: `make demo` and `make test`. Both run `make setup` first, which is
# idempotent: a second run downloads nothing and works offline.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint unit integration

# The Python environment: uv resolves requirements.lock (the whole pinned tree) into .venv/.
$(VENV)/.installed: pyproject.toml requirements.lock
	@echo "==> python environment in $(VENV)/ (requirements.lock)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q uv==0.13.8
	@$(BIN)/uv pip install -q --python $(BIN)/python -r requirements.lock
	@$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	@touch $@

# Everything else (Flink distribution, Kafka broker jars, the job jars) goes to .stack/.
setup: $(VENV)/.installed
	@$(BIN)/splitaudit setup

demo: setup
	@$(BIN)/splitaudit demo

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(VENV)/.installed
	$(BIN)/pytest -m "not integration"

integration: setup
	$(BIN)/pytest -m integration

test: setup lint
	$(BIN)/pytest
