# Two entry points a new machine needs: `make demo` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,milvus-server]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/python run.py demo

# The fast tier first: lint and format check, the import contract, types (about a minute).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	mkdir -p build/typecheck && ln -sfn ../.. build/typecheck/citescope
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

# Every dev set through the real offline pipeline; rewrites docs/quality.md. About 35 min on a
# 2-core machine once the embedding cache holds the corpora (see docs/quality.md);
# EVAL_ARGS=--resume continues an interrupted run.
eval: install
	$(BIN)/python -m citescope.workflows.evaluation.quality_report $(EVAL_ARGS)

.PHONY: install lint demo test eval
