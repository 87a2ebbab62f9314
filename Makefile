# Every habit of the project is a target here. `make dev` and `make test` install
# what they need on first use (.venv from the pinned locks, node_modules via npm ci).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ARCH ?= x86_64
PORT ?= 3000
# DynamoDB Local's port under `make dev`; `make synth-local` points the functions at it (docs/deploy.md)
DYNAMODB_PORT ?= 8000
LOCAL_OUT := cdk.out.local
SUB ?= demo-customer
GROUPS ?=
FN ?=
EVENT ?=
PYTEST_ARGS ?=
SNAPSTART ?=
# seconds between two sweeps of make dev's TTL emulator (DynamoDB Local never expires items; 0: off)
TTL_INTERVAL ?= 2
# seconds between two runs of each schedule the templates hold (payment_steps' windows' sweep, rate(1 minute)
# deployed): an unpaid order expires within its window plus about a minute even with TTL_INTERVAL=0; 0: none
SCHEDULE_INTERVAL ?= 10
# `make dev`'s payments: stripe (localstripe on a free port, the default) or none (version 2's flow)
PAYMENTS ?= stripe
# When the authorised amount is captured: on_ship (at SHIPPED, the default) or on_confirm (at CONFIRMED, refunded at
# CANCELLED). `make synth`/`make dev CAPTURE=on_confirm` synthesize with -c capture=on_confirm: CAPTURE on the functions
# that take payments and payment_steps' filters for it, which `make dev` runs (docs/deploy.md, "Synthesize only")
CAPTURE ?= on_ship
# `make dev PRICES_INCLUDE_TAX=true`: the catalogue's prices include tax (what `-c prices_include_tax=true` deploys)
PRICES_INCLUDE_TAX ?= false
ORDER ?=
CARD ?=

export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_RUNTIME_PACKAGE_CACHE_ROOT := $(CURDIR)/.cache/jsii
export CDK_DISABLE_CLI_TELEMETRY := true
export AWS_ACCOUNT_ID_ENDPOINT_MODE := disabled
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYTHONPATH := $(CURDIR)/layers/shared/python:$(CURDIR)
# Bytecode is written, under .cache/pycache (out of the source and layer folders): an environment that sets
# PYTHONDONTWRITEBYTECODE (this machine's does) made every process compile every module it imports, again, each
# time (the venv is installed --no-compile, below): a third of a test process's start-up CPU.
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/.cache/pycache

.PHONY: setup dev pay logs test unit coverage integration infra e2e lint typecheck synth synth-local layers openapi \
        invoke token replay bench drill deploy destroy lock clean

# The venv and node_modules side by side (pip unpacks on one core); a sub-make, since `make` runs one job at a time.
setup:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed node_modules/.installed

# pip installs uv at the lock's pin, and uv the lock: the same wheels, without pip's 40 s of unpacking on one core.
# Nothing is byte-compiled at install (uv's default; aws-cdk-lib's, moto's, duckdb's...): Python compiles what is
# imported, once, on first use.
$(VENV)/.installed: requirements/dev.txt requirements/runtime.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile "$$(grep '^uv==' requirements/dev.txt)"
	$(VENV)/bin/uv pip install -q --python $(PY) -r requirements/dev.txt
	$(PY) -m pip check >/dev/null
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The dependencies layer; build_layers keeps its own fingerprint of the lock, and make skips even asking
# it while the lock is older than the stamp.
layers: setup build/layers/deps-$(ARCH).stamp build/layers/payments-$(ARCH).stamp

build/layers/deps-$(ARCH).stamp: requirements/runtime.txt infra/build_layers.py
	$(PY) -m infra.build_layers --arch $(ARCH)
	touch $@

# Stripe's library, for the functions that call Stripe when a stage deploys with -c payments=stripe (docs/payments.md)
build/layers/payments-$(ARCH).stamp: requirements/payments.txt infra/build_layers.py
	$(PY) -m infra.build_layers --arch $(ARCH) --layer payments
	touch $@

# `make synth SNAPSTART=true`: the templates with Lambda SnapStart (docs/deploy.md, "SnapStart (opt-in)").
# Synthesized again only when an input is newer than cdk.out's stamp of these settings (a warm `make dev`
# skips it); the CLI's chatter is shown only when it fails.
SYNTH_INPUTS := app.py cdk.json requirements/runtime.txt requirements/payments.txt \
  $(shell find infra functions layers/shared -type f -not -path '*/__pycache__/*' -not -name '*.pyc' 2>/dev/null)
# The local templates are synthesized with payments on (-c payments=stripe): they then hold what a paying stage
# deploys (the payments layer, payment_steps and its stream filters), which `make dev` runs; `make dev
# PAYMENTS=none` (and the e2e stacks) switch every function to version 2's flow with PAYMENTS=none.
SYNTH_PAYMENTS ?= stripe
SYNTH_STAMP := cdk.out/.synth-$(ARCH)-payments-$(SYNTH_PAYMENTS)-capture-$(CAPTURE)$(if $(SNAPSTART),-snapstart-$(SNAPSTART),)

synth: setup layers $(SYNTH_STAMP)

$(SYNTH_STAMP): $(SYNTH_INPUTS) build/layers/deps-$(ARCH).stamp build/layers/payments-$(ARCH).stamp
	rm -f cdk.out/.synth-*
	@mkdir -p .cache
	npx cdk synth --no-notices -q -c arch=$(ARCH) -c payments=$(SYNTH_PAYMENTS) -c capture=$(CAPTURE) \
	  $(if $(SNAPSTART),-c snapstart=$(SNAPSTART),) > /dev/null 2> .cache/synth.log || { cat .cache/synth.log >&2; exit 1; }
	touch $@

# Templates for `sam local invoke` only (never deploy them): every function on `make dev`'s DynamoDB Local.
synth-local: setup layers
	npx cdk synth --no-notices -q -c arch=$(ARCH) -c local=true \
	  -c local_dynamodb_endpoint=http://host.docker.internal:$(DYNAMODB_PORT) --output $(LOCAL_OUT) > /dev/null

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

MYPY := $(VENV)/bin/mypy layers/shared/python/shop functions infra local_runtime bench app.py

typecheck: setup
	$(MYPY)

# The tiers (docs/testing.md). Two workers (WORKERS=3 to measure a third on a quiet machine: docs/testing.md,
# "Time"); tests of one xdist_group (a stack, a synth) share a worker.
# pytest exits 5 when it selected no test: that must fail the build, and it does.
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadgroup

# Everything: lint, synth, then every tier below in one run, with mypy beside them from the start (it fills the
# core that the layers' downloads and the synth leave idle); both must pass. Lint and the two layers run side by side.
test: setup
	@mkdir -p .cache
	@$(MYPY) > .cache/mypy.log 2>&1 & mypy=$$!; \
	$(MAKE) --no-print-directory -j2 lint synth && $(PY) -m pytest $(PARALLEL) $(PYTEST_ARGS); tests=$$?; \
	if wait $$mypy; then tail -n 1 .cache/mypy.log; else cat .cache/mypy.log; echo "mypy failed" >&2; exit 1; fi; \
	exit $$tests

# The fast lane (under 30 s on two workers): the rules on the in-memory store; tests/unit/conftest.py keeps moto
# and DynamoDB Local out.
unit: setup
	$(PY) -m pytest tests/unit -n $(WORKERS) $(PYTEST_ARGS)

# The fast lane's line coverage of each service module and handler (docs/testing.md, "The fast lane").
coverage: setup
	@mkdir -p .cache
	COVERAGE_FILE=.cache/coverage $(PY) -m pytest tests/unit -n $(WORKERS) -q --cov=shop.services --cov=functions \
	  --cov-report=term $(PYTEST_ARGS)

# Handlers, repositories, stream rules and the local runtime on moto and on DynamoDB Local (`integration`
# marker: the DynamoDB semantics), concurrency with real threads.
integration: setup synth
	$(PY) -m pytest $(PARALLEL) -m "not infra and not e2e" --ignore=tests/unit $(PYTEST_ARGS)

# The CDK app's templates (synthesized in-process, once per session).
infra: setup layers
	$(PY) -m pytest $(PARALLEL) -m infra $(PYTEST_ARGS)

# The local stack over HTTP, as `make dev` runs it (needs the synthesized templates).
e2e: setup synth
	$(PY) -m pytest $(PARALLEL) -m e2e $(PYTEST_ARGS)

openapi: setup
	$(PY) -m local_runtime.openapi > openapi.json

# `make dev V=1`: the functions' logs on the terminal too (else only in .local/logs/; `make logs` follows them).
# `make dev FUNCTION_ENV="STATUS_SHARDS=4 STATUS_SHARDS_NEXT=16"`: variables of every function overridden (a switch's phase).
dev: setup synth
	$(PY) -m local_runtime dev --port $(PORT) --dynamodb-port $(DYNAMODB_PORT) --ttl-interval $(TTL_INTERVAL) \
	  --schedule-interval $(SCHEDULE_INTERVAL) --payments $(PAYMENTS) --capture $(CAPTURE) --env PRICES_INCLUDE_TAX=$(PRICES_INCLUDE_TAX) $(if $(FRESH),--fresh,) $(if $(MEMORY),--in-memory,) $(if $(V),-v,) $(foreach pair,$(FUNCTION_ENV),--env $(pair))

# Pay an order of the running `make dev` through localstripe: `make -s pay ORDER=<id> [CARD=declined]`
# (docs/payments.md, "Local runs"). pm_card_visa authorises; CARD=declined is a card localstripe declines.
pay: setup
	@$(PY) -m local_runtime pay --order "$(ORDER)" $(if $(CARD),--card $(CARD),)

# Follow a running `make dev`'s function logs, one readable line each (RAW=1: the JSON lines as deployed).
logs: setup
	@$(PY) -m local_runtime logs $(if $(RAW),--raw,)

token: setup
	@$(PY) -m local_runtime token --sub "$(SUB)" $(if $(GROUPS),--groups "$(GROUPS)",)

invoke: setup synth
	$(PY) -m local_runtime invoke --function "$(FN)" --event "$(EVENT)"

# `make migrate` and `make replay` work on the running `make dev`'s DynamoDB Local, whatever its port (its
# .local/stack.json); a DYNAMODB_PORT given on the command line or in the environment wins.
GIVEN_DYNAMODB_PORT = $(if $(filter-out file,$(origin DYNAMODB_PORT)),--dynamodb-port $(DYNAMODB_PORT),)

# Re-drive given-up stream batches through order_events (docs/operations.md, "Stream records dropped"):
# BUCKET=<StreamFailureBucket> FUNCTION=<OrderEventsFunction> for a deployed stage; without them,
# .local/stream-failures/ through the DynamoDB Local of a running `make dev`.
replay: setup $(if $(BUCKET),,synth)
	$(PY) -m local_runtime replay $(if $(BUCKET),--bucket "$(BUCKET)" --function "$(FUNCTION)",$(GIVEN_DYNAMODB_PORT) $(foreach pair,$(FUNCTION_ENV),--env $(pair)))

bench: setup synth
	$(PY) -m bench

# Fault drills (docs/operations.md, "Fault drills"): five faults under load on loopback, under 5 minutes;
# writes `faults` into bench/results.json and fails when a drill's guarantees do not hold.
drill: setup synth
	$(PY) -m bench.drills

deploy: setup
	$(PY) -m infra.build_layers --arch arm64
	$(PY) -m infra.build_layers --arch arm64 --layer payments
	npx cdk deploy --no-notices --all -c arch=arm64 $(CDK_ARGS)

destroy: setup
	npx cdk destroy --no-notices --all -c arch=arm64 $(CDK_ARGS)

# Re-resolve both locks from the hand-edited .in files (needs the registry).
lock:
	rm -rf /tmp/shop-lock-rt /tmp/shop-lock-dev
	$(PYTHON) -m venv /tmp/shop-lock-rt && /tmp/shop-lock-rt/bin/pip install -q -r requirements/runtime.in
	(echo "# Lock of runtime.in (every transitive pin but the AWS SDK, which the Lambda runtime provides)."; \
	 echo "# Regenerate: make lock"; \
	 /tmp/shop-lock-rt/bin/pip freeze --exclude pip --exclude setuptools --exclude boto3 --exclude botocore \
	   --exclude s3transfer --exclude urllib3 --exclude python-dateutil --exclude six) > requirements/runtime.txt
	$(PYTHON) -m venv /tmp/shop-lock-dev && /tmp/shop-lock-dev/bin/pip install -q -r requirements/dev.in
	(echo "# Lock of dev.in (every transitive pin). Regenerate: make lock"; \
	 /tmp/shop-lock-dev/bin/pip freeze --exclude pip --exclude setuptools) > requirements/dev.txt

clean:
	rm -rf cdk.out $(LOCAL_OUT) build .cache .pytest_cache .mypy_cache .ruff_cache

# Every target, one line each (tests/local_runtime/test_make_help.py: each name on a .PHONY line is listed here).
.PHONY: help
HELP := \
  'help|this list' \
  'setup|.venv from the pinned locks and node_modules (npm ci); every other target runs it first' \
  'dev|the whole backend on http://127.0.0.1:3000, Ctrl-C stops it [PORT= DYNAMODB_PORT= FRESH=1 MEMORY=1 V=1 PAYMENTS=none PRICES_INCLUDE_TAX=true SCHEDULE_INTERVAL=]' \
  'pay|pay an order of the running make dev through localstripe: make -s pay ORDER=<id> [CARD=declined]' \
  'logs|follow the function logs of the running make dev, one readable line each [RAW=1]' \
  'token|a bearer token for the local gateway: make -s token SUB=<id> [GROUPS=admin]' \
  'invoke|one function in-process on one event: FN=<function> EVENT=<file>' \
  'replay|re-drive given-up stream batches: of the running make dev, or BUCKET= FUNCTION= of a stage' \
  'migrate|a table migration on the DynamoDB Local of the running make dev: NAME=<migration> [DRY_RUN=1]' \
  'archive-query|a named query of the order archive, by DuckDB: NAME=<query> [ARCHIVE_DIR=<copy>]' \
  'test|what CI runs before a deploy: lint, synth, every test tier and mypy' \
  'unit|the fast lane: the rules on the in-memory store, under 30 s on a quiet machine' \
  'coverage|the fast lane with its line coverage of every service module and handler' \
  'integration|handlers, repositories, streams and the local runtime on moto and DynamoDB Local' \
  'infra|the synthesized templates of the CDK app' \
  'e2e|the local stack over HTTP, as make dev runs it' \
  'fuzz|the schemathesis run of make test alone [E2E_FUZZ_MAX_EXAMPLES=<n>]' \
  'scale|the heavy tests at full size: migration 0001 over 10,000 products, a move of 5,000' \
  'migrate-10k|the listed-exactly-once test of migration 0001 over 10,000 products' \
  'lint|ruff check and ruff format --check' \
  'typecheck|mypy over the shop layer, functions, infra, local_runtime and bench' \
  'layers|the Lambda layers (dependencies, payments), rebuilt when their locks change' \
  'synth|cdk synth into cdk.out/, again only when an input changed [SNAPSTART=true]' \
  'synth-local|templates for sam local invoke against the DynamoDB Local of make dev, into cdk.out.local/' \
  'openapi|regenerate openapi.json' \
  'bench|the benchmarks, into bench/results.json' \
  'drill|the fault drills under load, into bench/results.json' \
  'deploy|deploy every stack to the AWS account in your environment [CDK_ARGS=...]' \
  'destroy|remove the stacks from that account' \
  'lock|re-resolve requirements/*.txt from the hand-edited .in files (needs the registry)' \
  'clean|remove cdk.out, cdk.out.local, build and the caches'
help:
	@echo 'make <target>, the targets (README.md, "Everyday commands"):'
	@for entry in $(HELP); do printf '  %-14s %s\n' "$${entry%%|*}" "$${entry#*|}"; done

# Table migrations (docs/operations.md, "Migrations"): against `make dev`'s DynamoDB Local, with a progress bar;
# resumes at its checkpoints when run again. NAME=0001-list-version-1-products [DRY_RUN=1] [RATE=200] [SEGMENTS=4]
# 0002-move-status-shards reads STATUS_SHARDS, STATUS_SHARDS_NEXT and STATUS_SHARDS_WRITERS=next from the
# environment, as the functions do ([LOAD_ORDERS=N]: first write N orders under STATUS_SHARDS).
.PHONY: migrate migrate-10k archive-query scale fuzz
NAME ?=
RATE ?= 200
SEGMENTS ?= 4
migrate: setup
	$(PY) -m local_runtime.migrate --name "$(NAME)" $(GIVEN_DYNAMODB_PORT) --rate $(RATE) \
	  --segments $(SEGMENTS) $(if $(DRY_RUN),--dry-run,) $(if $(LOAD_ORDERS),--load-orders $(LOAD_ORDERS),)

# Migration 0001's listed-exactly-once test at 10,000 version 1 products (make test runs it at 600). Alone:
# after 50,000 writes DynamoDB Local's stream bookkeeping slows every later write of the same instance.
migrate-10k: setup
	MIGRATION_V1_PRODUCTS=10000 $(PY) -m pytest tests/repository/test_migrations.py -n 0 -k listed_exactly_once $(PYTEST_ARGS)

# The heavy tests at full size (docs/testing.md, "Full size"), outside `make test`, which runs each at the
# smallest size that proves the same property: migration 0001 at 10,000 products (migrate-10k), then, on a
# DynamoDB Local of its own, a category of 5,000 products moved in the deployed steps of 100 (make test: 600
# in steps of 25).
scale: migrate-10k
	CATEGORY_MOVE_PRODUCTS=5000 CATEGORY_MOVE_TEST_STEP=100 \
	  $(PY) -m pytest tests/integration/test_category_move.py -n 0 -k many_products $(PYTEST_ARGS)

# The schemathesis run of make test alone at the config's full size (every operation, phase and check of
# schemathesis.toml, its 15 examples per operation, where make test runs 5) on the local stack;
# E2E_FUZZ_MAX_EXAMPLES=<n> for more.
fuzz: setup synth
	E2E_FUZZ_MAX_EXAMPLES=$(or $(E2E_FUZZ_MAX_EXAMPLES),config) $(PY) -m pytest tests/e2e/test_fuzz.py -n 0 -k schemathesis_finds_nothing $(PYTEST_ARGS)

# A named query of the order archive (infra/archive_queries.py) run by DuckDB over `make dev`'s saved archive
# (.local/s3/<bucket>/, written when make dev stops) or ARCHIVE_DIR: NAME=revenue-by-day|top-products-by-units|return-rate-by-product
ARCHIVE_DIR ?=
archive-query: setup
	$(PY) -m local_runtime.archive_query --name "$(NAME)" $(if $(ARCHIVE_DIR),--archive-dir "$(ARCHIVE_DIR)",)
