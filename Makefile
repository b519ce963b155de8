# Two commands do all the set-up on a fresh machine with python3 and make:
#   make dev    runs the whole scheduler locally (moto + API + tick + executors)
#   make test   lint, types and every test (what .ci/run calls)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: dev test lint security soak unit integration e2e typecheck build bench bench-quick clean

# The venv is rebuilt when pyproject.toml changes (stale) or is missing.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# checkov pins an older boto3 than ours, so the scanner gets a venv of its own.
CHECKOV_VENV  := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
$(CHECKOV_STAMP):
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet 'checkov>=3.2,<4'
	touch $(CHECKOV_STAMP)

dev: $(STAMP)
	$(BIN)/tickwork dev $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The template's security scan: every failed check is fixed, or skipped in the template with its reason.
security: $(CHECKOV_STAMP)
	$(CHECKOV_VENV)/bin/checkov -f template.yaml --framework cloudformation --compact --quiet --skip-download

test: lint typecheck security
	$(BIN)/python -m pytest -q --durations=15 $(PYTEST_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/python -m pytest -q tests/integration

e2e: $(STAMP)
	$(BIN)/python -m pytest -q tests/e2e

# sam build needs python3.13 on PATH; pyenv ships one here.
build:
	PYENV_VERSION=3.13.0:3.11.7 sam build

# Three nodes, a SIGKILL every 20 s, 2% AWS errors, 5,000+ runs (about 12 minutes); writes docs/reliability.md.
soak: $(STAMP)
	$(BIN)/python -m benchmarks.soak

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run --quick

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache
