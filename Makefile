# guardkit developer entry points. `make demo` and `make test` create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast fast-venv test-crewai crewai-venv lint typecheck bench clean

DEMO_STAMP := $(VENV)/.installed-demo

# Install logs go to .venv/install.log; they are shown only if the install fails.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	$(BIN)/python -m pip install --quiet -e '.[dev]' >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	touch $(STAMP) $(DEMO_STAMP)

# The demo needs guardkit alone (no extras): a first `make demo` installs only that.
$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e . > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
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

# The tests run on every core (pytest-xdist, at most 4 workers): about 5 minutes on an idle
# 2-core machine, 8-9 serially.
test: lint typecheck
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4

# The service-free part of the suite (no PostgreSQL, no browser, no slow multi-process tests) on
# another interpreter, in its own venv: make test-fast PYTHON=python3.13 FAST_VENV=.venv-3.13
FAST_VENV ?= .venv-fast
# Its install alone (`make fast-venv ...`), which .ci/run starts while the main suite runs.
fast-venv: $(FAST_VENV)/.installed

$(FAST_VENV)/.installed: pyproject.toml
	test -x $(FAST_VENV)/bin/python || $(PYTHON) -m venv $(FAST_VENV)
	$(FAST_VENV)/bin/python -m pip install --quiet -e '.[dev]' > $(FAST_VENV)/install.log 2>&1 || (cat $(FAST_VENV)/install.log; exit 1)
	touch $@

# FAST_TESTS narrows it to some folders (default: every test).
FAST_TESTS ?=
test-fast: fast-venv
	GUARDKIT_TEST_SERVICES=none $(FAST_VENV)/bin/python -m pytest -q -n auto --maxprocesses 4 -m "not slow" -W error::ResourceWarning $(FAST_TESTS)

# crewai cannot be installed beside the dev extras (crewai pins mcp<2, the mcp extra needs 2.3 or
# later; it needs OpenTelemetry 1.45.1 or later, google-adk caps it at 1.44): its integration's
# tests (tests/frameworks/crewai and the docs' CrewAI example, marker `crewai`) run in a venv of
# their own, where they must not skip (GUARDKIT_TEST_CREWAI=1). `make crewai-venv` installs it
# alone, which .ci/run starts while the main suite runs; a few seconds of tests follow.
CREWAI_VENV ?= .venv-crewai
crewai-venv: $(CREWAI_VENV)/.installed

$(CREWAI_VENV)/.installed: pyproject.toml
	test -x $(CREWAI_VENV)/bin/python || $(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/python -m pip install --quiet -e '.[crewai]' pytest hypothesis > $(CREWAI_VENV)/install.log 2>&1 || (cat $(CREWAI_VENV)/install.log; exit 1)
	touch $@

test-crewai: crewai-venv
	GUARDKIT_TEST_CREWAI=1 GUARDKIT_TEST_SERVICES=none CREWAI_DISABLE_TELEMETRY=true \
	    CREWAI_TRACING_ENABLED=false $(CREWAI_VENV)/bin/python -m pytest -q -m crewai tests/frameworks/crewai tests/test_docs.py

bench: $(STAMP)
	$(BIN)/python benchmarks/guard_overhead.py
	$(BIN)/python benchmarks/tool_overhead.py
	$(BIN)/python benchmarks/tracing_overhead.py
	$(BIN)/python benchmarks/scan_speed.py
	$(BIN)/python benchmarks/server_load.py
	$(BIN)/python benchmarks/framework_overhead.py
	$(MAKE) crewai-venv && $(CREWAI_VENV)/bin/python benchmarks/framework_overhead.py --only crewai

clean:
	rm -rf $(VENV) .venv-* build dist *.egg-info
