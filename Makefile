# guardkit developer entry points. `make demo` and `make test` create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/guardkit demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check guardkit codemods plugins
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --strict codemods
	$(BIN)/mypy --strict plugins
	$(BIN)/mypy --strict tests/typing

test: lint typecheck
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/guard_overhead.py
	$(BIN)/python benchmarks/tool_overhead.py
	$(BIN)/python benchmarks/tracing_overhead.py
	$(BIN)/python benchmarks/scan_speed.py
	$(BIN)/python benchmarks/server_load.py

clean:
	rm -rf $(VENV) build dist *.egg-info
