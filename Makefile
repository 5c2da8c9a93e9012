# The README's commands. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test test-slow lint run reproduce bench clean

# torch first, pinned to the local CPU wheel, so no later step pulls a CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: install lint
	$(BIN)/python -m pytest

test-slow: install
	$(BIN)/python -m pytest -m slow

reproduce: install
	$(BIN)/esbench reproduce table1 scale=mini

bench: install
	$(BIN)/esbench bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

run: install
	$(BIN)/esbench run algo=openai_es env=halfcheetah budget=mini seed=0
