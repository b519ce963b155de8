# Two commands do all the set-up on a fresh machine with python3 and make:
#   make dev    runs the whole scheduler locally (moto + API + tick + executors)
#   make test   lint, types and every test (what .ci/run calls)
PYTHON ?= python3
# Every `tickwork dev`, function process and CLI call the tests start compiles what it imports unless the bytecode
# is cached: about 1.5 s of CPU a process where PYTHONDONTWRITEBYTECODE is set (py-spy of a node's start).
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: dev dist test in-process-tests runtime-tests test-prerequisites http-fuzz generated browser-deps console-vendor lint security soak unit integration e2e typecheck build sam lock bench bench-quick clean simulate

# The venv installs the lock files, hashes checked: requirements-dev.txt (every tool and test dependency) and, within
# it, the same versions as shared/requirements.txt, the layer's lock. So the tests import what is deployed.
# It is rebuilt when a lock or pyproject.toml changes (stale) or is missing: exactly the lock (`uv pip sync`).
# pip installs uv alone, its version and hashes read from the lock; uv installs the rest: 15 s on a 2-core machine
# with an empty cache, where pip took 2 to 4 minutes.
$(STAMP): pyproject.toml requirements-dev.txt shared/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import re; print(re.search(r'^uv==[^#]*', open('requirements-dev.txt').read(), re.M)[0])" \
		> $(VENV)/uv-requirement.txt
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(VENV)/uv-requirement.txt
	$(BIN)/uv pip sync --quiet --python $(BIN)/python --require-hashes requirements-dev.txt
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

# Resolve the locks again after editing shared/requirements.in or pyproject.toml's dev list (UPGRADE=--upgrade to
# move every pin forward). One resolution for Python 3.11 and later on every platform (--universal): the layer is
# built for arm64 and Python 3.13, the tests run here.
LOCK_FLAGS := --quiet --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock"
lock: $(STAMP)
	$(BIN)/uv pip compile $(LOCK_FLAGS) $(UPGRADE) pyproject.toml --extra dev --group test -o requirements-dev.txt
	$(BIN)/uv pip compile $(LOCK_FLAGS) $(UPGRADE) shared/requirements.in -c requirements-dev.txt -o shared/requirements.txt

# The wheel users install (`pip install tickwork`, docs/jobs-as-code.md): the CLI, the typed client and the console,
# with the local runtime for `tickwork[dev]`; built by uv (in the dev lock) with the build backend pyproject.toml
# names. tests/cli/test_wheel.py installs it in a fresh venv.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/uv build --quiet --wheel --out-dir dist
	rm -rf build  # setuptools' staging copy of the sources
	@for wheel in dist/*.whl; do echo "$$wheel: $$(stat -c %s $$wheel) bytes"; done

# checkov pins an older boto3 than ours, so the scanner gets a venv of its own.
CHECKOV_VENV  := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
# uv (from the dev lock) installs the tools' venvs: the SAM CLI's 340 MB take 5 s with it, minutes with pip.
$(CHECKOV_STAMP): $(STAMP)
	test -x $(CHECKOV_VENV)/bin/python || $(BIN)/uv venv --quiet --python $(PYTHON) $(CHECKOV_VENV)
	$(BIN)/uv pip install --quiet --python $(CHECKOV_VENV)/bin/python 'checkov>=3.2,<4'
	touch $(CHECKOV_STAMP)

dev: $(STAMP)
	$(BIN)/tickwork dev $(ARGS)

# The files generated from the code, committed, that a test compares with what the code makes now: after a change
# to template.yaml, a route, a model or a module's docstring, this writes them anew.
generated: $(STAMP)
	$(BIN)/python -m tickwork_local.generate.deploy_doc
	$(BIN)/python -m tickwork_local.generate.house_map
	$(BIN)/python -m tickwork_local.generate.openapi_file
	$(BIN)/python -m tickwork_local.generate.options_doc
	$(BIN)/python -m tickwork_cli.definition_schema

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The template as it deploys with the private network's parameters set (docs/security.md): the branches the defaults
# leave off, which the scan and the lint check in this copy (tickwork_local.stack.template_renderings).
# The others: with the token API and the stack's own Cognito user pool (docs/security.md, "Sign-in with tokens (JWT)");
# with an IdP of your own (JwtIssuer) and the hosted console (docs/security.md, "The hosted console"); with the jobs
# table a DynamoDB global table, MRSC or MREC, as the stack that creates it (docs/regions.md). (Not .PHONY: make
# skips pattern rules for phony targets.)
VPC_RENDERING := .build/template-vpc.json
JWT_RENDERING := .build/template-jwt.json
ISSUER_RENDERING := .build/template-issuer.json
PROVISIONED_RENDERING := .build/template-provisioned.json
STRONG_RENDERING := .build/template-strong.json
EVENTUAL_RENDERING := .build/template-eventual.json
%-rendering: $(STAMP)
	$(BIN)/python -m tickwork_local.stack.template_renderings $* .build/template-$*.json

# The template's security scan: every failed check is fixed, or skipped in the template with its reason. One run
# scans the template and its VPC, JWT, issuer, provisioned, strong and eventual renderings.
security: $(CHECKOV_STAMP) vpc-rendering jwt-rendering issuer-rendering provisioned-rendering strong-rendering eventual-rendering
	$(CHECKOV_VENV)/bin/checkov -f template.yaml $(VPC_RENDERING) $(JWT_RENDERING) $(ISSUER_RENDERING) $(PROVISIONED_RENDERING) $(STRONG_RENDERING) $(EVENTUAL_RENDERING) --framework cloudformation --compact --quiet --skip-download

# The in-process suites (moto in the test process: CPU-bound) are spread over the cores by pytest-xdist (the files of
# the longest single tests first, tests/conftest.py). Beside them, the suites that start `tickwork dev` processes and
# wait in real time (e2e, browser) run three files at a time (--dist loadfile: a file's tests share their runtime;
# longest first, tests/e2e/conftest.py); the in-process suites run at nice 10, so the runtimes they time come first.
# Three at a time holds with a core taken away: all 132 passed in 6 min 38 s beside a process spinning on one core
# (5 min 49 s without it). Where the time goes, a clean clone on a 2-core machine (2026-11-29, 10 min 46 s in all):
# about 55 s for the venvs, lint, mypy, checkov's venv, `sam validate --lint` (seven renderings), `sam build` and the
# HTTP fuzz beside them; then 9 min 50 s for the 3,314 in-process tests (one boto3 session per test process,
# tests/harness.py; moto's transactions undone by item, tickwork_local.aws.moto_transactions) beside 6 min 47 s for the
# 138 e2e and browser tests (one Chromium per test process), the quick soak the longest (benchmarks/soak.py:
# production lease and recovery times, about 2 min 40 s), then the bursts and the fair share's flood. One after the
# other the two took 5 min 15 s and 5 min 49 s (11 min 55 s in all, 38 fewer tests). Earlier clean clones on a slower
# 2-core host took 22 to 24 minutes with the phases one after the other and the e2e files two at a time. With half
# the CPU (a cgroup quota of one core's time across the two), a clean clone passed whole in 18 min 19 s. checkov's
# scan of the template and its renderings runs once, as a test (tests/template/test_checkov.py: the same files as
# `make security`, and a control that must fail, in one run), not before the tests too. On an xdist worker,
# schemathesis runs a parametrized test as one item whose subtests answered one operation's examples, not every
# operation's (the HTTP fuzz's last test counts them): that file runs on its own, about 1 min, beside what the tests
# need first (it needs only the venv): three at a time (mypy, cfn-lint and the fuzz are CPU, the tools' installs
# mostly network).
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target test-prerequisites http-fuzz
	$(MAKE) --no-print-directory -j2 --output-sync=target in-process-tests runtime-tests

# Side by side (the `test` target's second step): the runtimes' suites wait in real time and leave part of two cores
# idle, which the in-process suites, at a lower priority, take.
in-process-tests: $(STAMP)
	TICKWORK_SAM_BUILT=1 nice -n 10 $(BIN)/python -m pytest -q -n auto --dist worksteal --durations=15 -p no:cacheprovider \
		--ignore=tests/e2e --ignore=tests/browser $(PYTEST_ARGS)

runtime-tests: $(STAMP)
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder --durations=10 tests/e2e tests/browser \
		--ignore=tests/e2e/test_schemathesis_http.py $(PYTEST_ARGS)

test-prerequisites: lint typecheck $(CHECKOV_STAMP) sam browser-deps

# The API fuzzed over HTTP (tests/e2e/test_schemathesis_http.py), on a `tickwork dev` of its own.
http-fuzz: $(STAMP)
	$(BIN)/python -m pytest -q tests/e2e/test_schemathesis_http.py $(PYTEST_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/python -m pytest -q tests/integration

e2e: $(STAMP)
	$(BIN)/python -m pytest -q tests/e2e

# The simulation of the features together (tests/simulation), long: N examples from SEED, each of STEPS steps; a
# failure is shrunk to a minimal sequence of steps, to save in tests/simulation/test_regressions.py. `make test` runs
# its CI slice (a fixed seed, a few examples). SKIP=invariants and WITHOUT=rules (comma-separated) explore past a
# failure already known.
SEED  ?= 1
N     ?= 200
STEPS ?= 20
simulate: $(STAMP)
	SIMULATION_SEED=$(SEED) SIMULATION_EXAMPLES=$(N) SIMULATION_STEPS=$(STEPS) SIMULATION_SKIP=$(SKIP) \
		SIMULATION_WITHOUT=$(WITHOUT) $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/simulation/test_simulation.py $(PYTEST_ARGS)

# The SAM CLI in a venv of its own (as checkov's): `sam validate --lint`, then `sam build` as a user runs it before
# `sam deploy` (for arm64: the layer's wheels are fetched for aarch64). sam build needs the functions' Python
# (python3.13) first on PATH: tickwork_local.stack.build finds it (PATH, pyenv, or TICKWORK_RUNTIME_PYTHON).
SAM_VENV  := .venv-sam
SAM_STAMP := $(SAM_VENV)/.installed
$(SAM_STAMP): $(STAMP)
	test -x $(SAM_VENV)/bin/python || $(BIN)/uv venv --quiet --python $(PYTHON) $(SAM_VENV)
	$(BIN)/uv pip install --quiet --python $(SAM_VENV)/bin/python 'aws-sam-cli==1.170.0'
	touch $(SAM_STAMP)
RUNTIME_PYTHON = $$($(BIN)/python -c 'from tickwork_local.stack.build import find_runtime_python, runtime_version; from tickwork_local.stack.template import load_template; print(find_runtime_python(runtime_version(load_template())))')

sam: $(SAM_STAMP) vpc-rendering jwt-rendering issuer-rendering provisioned-rendering strong-rendering eventual-rendering
	$(SAM_VENV)/bin/sam validate --lint
	$(SAM_VENV)/bin/sam validate --lint -t $(VPC_RENDERING)
	$(SAM_VENV)/bin/sam validate --lint -t $(JWT_RENDERING)
	$(SAM_VENV)/bin/sam validate --lint -t $(ISSUER_RENDERING)
	$(SAM_VENV)/bin/sam validate --lint -t $(PROVISIONED_RENDERING)
	$(SAM_VENV)/bin/sam validate --lint -t $(STRONG_RENDERING)
	$(SAM_VENV)/bin/sam validate --lint -t $(EVENTUAL_RENDERING)
	PATH="$$(dirname $(RUNTIME_PYTHON)):$$PATH" $(SAM_VENV)/bin/sam build

# The functions built for this machine (`tickwork dev --built .build/local` runs them as deployed).
build: $(STAMP)
	$(BIN)/tickwork build --out .build/local

# Three nodes, a SIGKILL every 20 s, 2% AWS errors, 5,000+ runs (about 12 minutes); writes docs/reliability.md.
soak: $(STAMP)
	$(BIN)/python -m benchmarks.soak

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run --quick

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(SAM_VENV) .build .aws-sam .pytest_cache .mypy_cache .ruff_cache

# The browser tests (tests/browser) drive Debian's Chromium through Playwright. As root (CI), install it when it is
# missing; otherwise say how.
CHROMIUM ?= /usr/bin/chromium
browser-deps:
	@if [ -x $(CHROMIUM) ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	else \
		echo "The browser tests need Chromium at $(CHROMIUM). Install it as root: apt-get update && apt-get install -y chromium" >&2; \
		echo "(the other tests run without it: .venv/bin/python -m pytest --ignore=tests/browser)" >&2; \
		exit 1; \
	fi

# The console's libraries (shared/tickwork_console/static/vendor, committed): fetched once from the npm registry
# at these versions, their built files copied as they are. Recorded in static/vendor/README.md.
CONSOLE_VENDOR := shared/tickwork_console/static/vendor
VENDOR_PACKAGES := htm@3.1.1 uplot@1.6.32 @dagrejs/dagre@3.1.3
console-vendor:
	rm -rf .console-vendor && mkdir -p .console-vendor
	cd .console-vendor && npm pack --silent $(VENDOR_PACKAGES) && for f in *.tgz; do mkdir -p "$${f%.tgz}" && tar xzf "$$f" -C "$${f%.tgz}"; done
	cp .console-vendor/htm-3.1.1/package/preact/standalone.module.js $(CONSOLE_VENDOR)/htm-preact-standalone.module.js
	cp .console-vendor/htm-3.1.1/package/LICENSE $(CONSOLE_VENDOR)/htm.LICENSE
	cp .console-vendor/uplot-1.6.32/package/dist/uPlot.esm.js $(CONSOLE_VENDOR)/uPlot.esm.js
	cp .console-vendor/uplot-1.6.32/package/dist/uPlot.min.css $(CONSOLE_VENDOR)/uPlot.min.css
	cp .console-vendor/uplot-1.6.32/package/LICENSE $(CONSOLE_VENDOR)/uPlot.LICENSE
	cp .console-vendor/dagrejs-dagre-3.1.3/package/dist/dagre.esm.js $(CONSOLE_VENDOR)/dagre.esm.js
	cp .console-vendor/dagrejs-dagre-3.1.3/package/LICENSE $(CONSOLE_VENDOR)/dagre.LICENSE
	rm -rf .console-vendor
