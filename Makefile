# Two entry points for a fresh machine: `make run` (the main job) and `make test` (the whole suite).
# Everything is installed into .venv by the project's own files.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# A CPU wheel of torch lies here on these machines; an unpinned torch would download gigabytes.
WHEELS := $(wildcard /opt/wheels)
PIP_FLAGS := $(if $(WHEELS),--find-links $(WHEELS),)
LAMARCK_HOME ?= $(HOME)/.lamarck

.PHONY: venv run bench test lint typecheck proto proto-check errors-doc errors-doc-check check clean

$(BIN)/.installed: pyproject.toml setup.py
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q $(PIP_FLAGS) "torch==2.13.0"
	$(BIN)/python -m pip install -q $(PIP_FLAGS) -e ".[dev,embed]"
	touch $@

venv: $(BIN)/.installed

# The main job: a small fleet (5 nodes, 1 Byzantine, under 4 operators: the Byzantine node under
# its own) learning the pitfalls workload, then its report (quorums decided among them); the
# fleet keeps running (point an agent at node1) until Ctrl-C.
FLEET_DIR ?= $(HOME)/.lamarck-fleet
run: venv
	$(BIN)/lamarck fleet up --nodes 5 --byzantine 1 --operators 4 --workload pitfalls --embedder hashing --dir $(FLEET_DIR)

# Every bench/*.py in --quick mode (FULL=1: full sizes); bench/results.json and one table.
bench: venv
	$(BIN)/python -m bench $(if $(FULL),--full,)

# Two workers, one test file each at a time (a module's fleet or node stays on one worker);
# TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2
test: venv
	$(BIN)/python -m pytest -q -rs -p no:cacheprovider $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile,)

# lint-imports walks lamarck's folder, which the editable install's remapping hides the other
# folders from: check the layers (pyproject [tool.importlinter]) over a regular install (build/
# emptied first, as for typecheck).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && rm -rf build && \
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation --target "$$d/site" . && \
	cd "$$d" && PYTHONPATH="$$d/site" $(CURDIR)/$(BIN)/lint-imports --no-cache $(CURDIR)/pyproject.toml

# mypy cannot follow an editable install with remapped folders: type-check a regular install.
# build/ goes first: setuptools never empties it, and a module moved away would be installed too.
typecheck: venv
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && rm -rf build && \
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation --target "$$d/site" . && \
	cd "$$d" && MYPYPATH="$$d/site" $(CURDIR)/$(BIN)/mypy --strict --config-file $(CURDIR)/pyproject.toml \
		--cache-dir $(CURDIR)/.mypy_cache -p lamarck

proto: venv
	$(BIN)/python tools/gen_proto.py

proto-check: venv
	$(BIN)/python tools/gen_proto.py --check

# docs/errors.md is generated from the code (status table, overrides, reasons raised).
errors-doc: venv
	$(BIN)/python tools/gen_errors_doc.py

errors-doc-check: venv
	$(BIN)/python tools/gen_errors_doc.py --check

check: lint typecheck proto-check errors-doc-check test

clean:
	rm -rf build dist *.egg-info .mypy_cache .ruff_cache
