# The README's commands. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install install-cw install-docs docs test test-slow lint run reproduce bench clean

# torch first, pinned to the local CPU wheel, so no later step pulls a CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# Continual World (conf/sequence/cw10.yaml): Meta-World 3.1.1 without its mujoco==3.3.0 pin, so this
# install keeps MuJoCo 4 (esbench/envs/metaworld_compat.py bridges the difference; pyproject's `cw`).
CW_STAMP := $(VENV)/.installed-cw
$(CW_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --no-deps "metaworld==3.1.1"
	touch $(CW_STAMP)

install-cw: $(CW_STAMP)

# The documentation site's tools (pyproject's `docs` extra), apart from `install` so a run needs none.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

install-docs: $(DOCS_STAMP)

# The documentation site (mkdocs.yml; pages in docs/), into site/. --strict: a broken link, a missing
# page or a docstring the API reference cannot read fails the build.
docs: install-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Test files in parallel on TEST_WORKERS processes (pytest-xdist; a file's tests stay together, so
# its module fixtures are built once). `pytest` alone runs serially.
TEST_WORKERS ?= 2

test: install install-cw install-docs lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

test-slow: install
	$(BIN)/python -m pytest -m slow -n $(TEST_WORKERS) --dist loadfile

reproduce: install
	$(BIN)/esbench reproduce table1 scale=mini

bench: install
	$(BIN)/esbench bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

run: install
	$(BIN)/esbench run algo=openai_es env=halfcheetah budget=mini seed=0
