# Taxonomist: `make run` serves the demo, `make test` runs the tests. Both install first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# A Python 3.12+ interpreter: PYTHON=... overrides; otherwise the first that runs of
# python3.12 (preferred: every scientific wheel exists for it), pyenv 3.12, then 3.13, then python3.
PYTHON ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python python3.13 $$HOME/.pyenv/versions/3.13*/bin/python /usr/local/bin/python3.1[2-9] python3; do \
	  if "$$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then command -v "$$p" || echo "$$p"; break; fi; done)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: help install run reset-demo test lint format migrate demo worker chromium texlive e2e guide-screenshots bench load load-quick reliability clean

help:
	@echo "make run    install, migrate, load the demo study and serve http://127.0.0.1:$(PORT)"
	@echo "make reset-demo  the demo study afresh (drops every change made in it)"
	@echo "make test   install (Chromium too) and run the test suite (PostgreSQL/Redis when DATABASE_URL/REDIS_URL are set)"
	@echo "make lint   ruff, ruff format --check, mypy, import-linter (the layers), migrations check"
	@echo "make e2e    the whole study in Chromium (installs Debian's chromium if missing)"
	@echo "make bench  benchmarks on PostgreSQL (DATABASE_URL), figures for docs/performance.md"
	@echo "make load   50 annotators + 2 leads for 5 minutes (LOAD_ARGS=...); make load-quick: 30 s"
	@echo "make reliability  crash, fault and concurrency tests (PostgreSQL + Redis)"

$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON)" ]; then echo "Taxonomist needs Python 3.12 or newer: install it or pass PYTHON=/path/to/python3.12" >&2; exit 1; fi
	@echo "Installing into $(VENV) with $(PYTHON)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

demo: migrate
	$(BIN)/python manage.py load_demo

# The embedded default: SQLite and Celery's filesystem broker, so no server is needed.
# load_demo loads the demo once and then keeps what the team did in it; make reset-demo starts it afresh.
# The worker runs beside the web process and stops with it (Ctrl+C stops both, quietly).
run: demo
	@echo ""
	@echo "  Taxonomist demo: http://127.0.0.1:$(PORT)/"
	@echo "  Logins (password for all three: taxonomist-demo):"
	@echo "    lead        lead of the tosem23 study"
	@echo "    annotator1  annotator"
	@echo "    annotator2  annotator"
	@echo ""
	@BIN=$(BIN) PORT=$(PORT) scripts/serve_demo.sh

# The demo afresh: every change made in the study tosem23 is dropped (make run keeps them).
reset-demo: migrate
	$(BIN)/python manage.py reset_demo

worker: install
	$(BIN)/celery -A config worker --loglevel=INFO

# tests/reliability kill PostgreSQL backends and worker processes on purpose: they run in a pytest
# process of their own, so no other test inherits a connection they closed.
# The browser tests need Chromium: the chromium rule installs it first (or stops, saying how).
test: install chromium texlive
	$(BIN)/pytest -q --ignore=tests/reliability $(PYTEST_ARGS)
	$(BIN)/pytest -q -rs tests/reliability $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Browser tests use Debian's Chromium through Playwright, never a downloaded browser build: CHROMIUM=...
# names another executable (tests/browser.py reads the same variable).
chromium:
	@if [ -n "$${CHROMIUM:-}" ]; then test -x "$$CHROMIUM" || { echo "CHROMIUM=$$CHROMIUM is not an executable" >&2; exit 1; }; \
	elif ! command -v chromium >/dev/null 2>&1 && ! test -x /usr/bin/chromium; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Chromium from Debian (for the browser tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "The browser tests need Chromium: sudo apt-get install -y chromium (Debian), or CHROMIUM=/path/to/chromium" >&2; exit 1; fi; \
	fi

# pdflatex compiles the paper's methods.tex in its test: installed from Debian when missing and we are root;
# otherwise that one test is skipped, saying so.
TEX_PACKAGES := texlive-latex-base texlive-latex-recommended texlive-fonts-recommended
texlive:
	@if ! command -v pdflatex >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing TeX from Debian (pdflatex, for the methods-section test)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	  else echo "pdflatex is missing: sudo apt-get install -y --no-install-recommends $(TEX_PACKAGES) (its test is skipped until then)" >&2; fi; \
	fi

e2e: install chromium
	$(BIN)/pytest tests/e2e -q

guide-screenshots: install chromium
	TAXONOMIST_SCREENSHOTS=1 $(BIN)/pytest tests/e2e -q

# run_all.py creates and migrates the bench database itself. SIZE=100000 for the full scale.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/bench
bench: install
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/run_all.py --size $(or $(SIZE),10000) $(BENCH_ARGS)

# Optional, never part of test or CI: Label Studio 1.23, doccano 1.8.4 and Potato 2.12, each in a virtualenv
# under PEERS_DIR (about 2 GB; a peer not installed there is skipped unless PEERS_ARGS=--install), and
# Taxonomist on PEERS_DATABASE_URL, under the same workload on 127.0.0.1; prints them side by side
# (bench/README.md). PEERS_ARGS=... e.g. "--only taxonomist,potato".
PEERS_SIZE ?= 10000
PEERS_DIR ?= .peers
PEERS_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/bench_peers
.PHONY: bench-peers
bench-peers: install
	$(BIN)/python bench/peers/run.py --size $(PEERS_SIZE) --dir $(PEERS_DIR) \
	  --database-url $(PEERS_DATABASE_URL) $(PEERS_ARGS)

load: install
	$(BIN)/python bench/load_run.py $(LOAD_ARGS)

load-quick: install
	$(BIN)/python bench/load_run.py --quick

reliability: install
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/reliability} \
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/0} $(BIN)/pytest tests/reliability -q -rs

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
