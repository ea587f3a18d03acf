# The two commands a new user types: `make demo` and `make test`.
# Both install into the virtual environment .venv/ first.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
INSTANCE := instance
STORE := $(INSTANCE)/sewerplan.gpkg
PROFILE ?= fort-plain
HOST ?= 127.0.0.1
PORT ?= 5000

.PHONY: install demo test lint bench serve clean

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "sewerplan needs Python 3.11 or newer (found $$($(PYTHON) --version))."; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || \
	  { echo "Could not create $(VENV). On Debian: sudo apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

install: $(STAMP)

## make demo: sample town -> embedded store -> analysis -> web page on http://$(HOST):$(PORT)
demo: install
	@mkdir -p $(INSTANCE)
	$(BIN)/sewerplan sample --out $(STORE) --overwrite
	$(BIN)/sewerplan analyze --profile $(PROFILE) --data $(STORE) --out $(STORE)
	$(BIN)/sewerplan serve --store $(STORE) --host $(HOST) --port $(PORT)

## make test: lint and the whole test suite
# The suite on two workers (pytest-xdist), a file's tests on one; each worker has its own test database
# (tests/conftest.py; .ci/run makes them).
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n 2 --dist loadfile

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## make bench: speed and memory benchmarks (bench/README.md)
bench: install
	$(BIN)/python -m pip install --quiet -r bench/requirements.txt
	$(BIN)/python bench/bench_mandate.py
	$(BIN)/python bench/bench_network.py
	$(BIN)/python bench/bench_map.py
	$(BIN)/python bench/bench_web.py

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
