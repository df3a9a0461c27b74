# The two commands: `make run` and `make test`. Both create the virtualenv on first use.
# (`make test` runs everything, the cluster tests included; `make test-fast` is the quick loop:
# README, "Tests".)
# Everything runs from this directory; Spark's metastore and warehouse live here (git-ignored).

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat constraints.txt pyproject.toml | cksum | cut -d' ' -f1)
PIP_VERSION := 25.3

# Every dbt and Spark process of this project: the repo's profiles.yml (override by exporting
# DBT_PROFILES_DIR), Spark bound to loopback, Spark's log4j at WARN (conf/log4j2.properties).
export DBT_PROFILES_DIR ?= $(CURDIR)
export SPARK_LOCAL_IP ?= 127.0.0.1
export SPARK_CONF_DIR ?= $(CURDIR)/conf
export DBT_SEND_ANONYMOUS_USAGE_STATS ?= false

.DEFAULT_GOAL := help
.PHONY: help setup jdk check browser run test test-fast test-cluster lint typecheck parse docs-check lineage pytest pytest-fast pytest-cluster verify \
	docs-serve bench slim-ci dbt clean distclean lock

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(STAMP): constraints.txt pyproject.toml
	@test "$(abspath $(VENV))" = "$(CURDIR)/.venv" || { echo "make: $(VENV) belongs to another \
	  directory and is not set up for its pyproject.toml: run make setup there"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null || \
	  { echo "make: Python 3.11 is required as '$(PYTHON)' (set PYTHON=/path/to/python3.11)"; exit 1; }
	@echo "Setting up $(VENV) (the first time downloads and builds PySpark, ~450 MB: a few minutes)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check pip==$(PIP_VERSION)
	$(BIN)/pip install --quiet -c constraints.txt setuptools
	$(BIN)/pip install --quiet --no-build-isolation -c constraints.txt -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# The fast start: one opt-in, off by default, that nothing depends on (docs/fast-start.md).
# `make ... KAPPA_SHOP_FAST_START=1` (or the variable exported) builds into .venv/fast-start/
# Hadoop's local file system without a `chmod` process per file (java/), a class-data sharing
# archive of Spark's classes, and a Spark properties file naming both; every Spark that make
# starts then reads the file, through PySpark's PYSPARK_SUBMIT_ARGS (kappa_shop/runtime/fast_start.py).
# Off, nothing is built and Spark starts as it comes.
KAPPA_SHOP_FAST_START ?=
FAST_START := $(filter 1,$(KAPPA_SHOP_FAST_START))
FAST_START_DIR := $(abspath $(VENV))/fast-start
FAST_START_CONF := $(FAST_START_DIR)/spark-fast-start.conf
ifdef FAST_START
export KAPPA_SHOP_FAST_START
export PYSPARK_SUBMIT_ARGS ?= --properties-file $(FAST_START_CONF) --load-spark-defaults pyspark-shell
endif

$(FAST_START_CONF): $(STAMP) $(wildcard java/kappa_shop/hadoop/*.java) scripts/kappa_shop/runtime/fast_start.py scripts/kappa_shop/runtime/fast_start_build.py scripts/kappa_shop/runtime/class_archive.py | jdk
	@echo "Building the fast start into $(FAST_START_DIR) (about a minute)"
	$(BIN)/python -m kappa_shop.runtime.fast_start_build $(FAST_START_DIR) >$(VENV)/fast-start.log 2>&1 || \
	  { tail -n 20 $(VENV)/fast-start.log; exit 1; }

# The JDK's javac, for the fast start's jar (its build, and the tests that build it), and its
# jshell (test_kafka deletes records with Kafka's admin client in it), installed from Debian's
# packages when missing
jdk:
	@command -v javac >/dev/null || { \
	  echo "Installing Debian's JDK 17 (javac) to compile java/"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; }

# The dbt packages of packages.yml (the contract, packages/kappa: a `local:` entry, which dbt
# deps links into dbt_packages/, so edits to the package need no reinstall).
DEPS := dbt_packages/.installed-$(shell cat packages.yml | cksum | cut -d' ' -f1)
$(DEPS): $(STAMP) packages.yml
	@rm -rf dbt_packages
	$(BIN)/dbt deps --quiet
	@touch $@

# Delta Lake's jars (the `local_delta` target's, the version of constraints.txt's delta-spark),
# fetched once by Spark's Ivy into its cache, as the browser is installed once: the tests run on
# Delta too and never skip, and a Spark that later starts with them reads the cache, offline too.
DELTA_VERSION := $(shell sed -n 's/^delta-spark==//p' constraints.txt)
DELTA_JAR := $(HOME)/.ivy2.5.2/jars/io.delta_delta-spark_2.13-$(DELTA_VERSION).jar
$(DELTA_JAR): | $(STAMP)
	@echo "Fetching Delta Lake's jars (io.delta:delta-spark_2.13:$(DELTA_VERSION), ~8 MB) into ~/.ivy2.5.2, once"
	@$(BIN)/python -m kappa_shop.runtime.delta >$(VENV)/delta-jars.log 2>&1 || { tail -n 5 $(VENV)/delta-jars.log; \
	  echo "make: Delta Lake's jars could not be fetched from Maven Central into ~/.ivy2.5.2 (above); the tests need them"; exit 1; }

# Apache Iceberg's Spark runtime (the `local_iceberg` target's, the version profiles.yml names),
# likewise: one jar of ~45 MB.
ICEBERG_VERSION := $(shell sed -n 's/.*iceberg-spark-runtime-4.0_2.13:\([0-9.]*\).*/\1/p' profiles.yml)
ICEBERG_JAR := $(HOME)/.ivy2.5.2/jars/org.apache.iceberg_iceberg-spark-runtime-4.0_2.13-$(ICEBERG_VERSION).jar
$(ICEBERG_JAR): | $(STAMP)
	@echo "Fetching Apache Iceberg's Spark runtime (org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:$(ICEBERG_VERSION), ~45 MB) into ~/.ivy2.5.2, once"
	@$(BIN)/python -m kappa_shop.runtime.iceberg $(ICEBERG_VERSION) >$(VENV)/iceberg-jars.log 2>&1 || { tail -n 5 $(VENV)/iceberg-jars.log; \
	  echo "make: Apache Iceberg's runtime could not be fetched from Maven Central into ~/.ivy2.5.2 (above); the tests need it"; exit 1; }

setup: $(STAMP) $(DEPS) $(DELTA_JAR) $(ICEBERG_JAR) $(if $(FAST_START),$(FAST_START_CONF)) ## create the virtualenv, install the pinned dependencies, the dbt packages, Delta's jars and Iceberg's runtime (and the fast start, with KAPPA_SHOP_FAST_START=1)

check: setup ## check the machine: Java 17 for Spark
	@$(BIN)/kappa-shop check

run: check ## load the sample log, dbt build, dbt docs generate, print a summary
	$(BIN)/kappa-shop build

# Each part of `make test` and `make test-fast` is timed; the times (and each test module's) are
# printed at the end (tests/parts.py), so that every run's log shows where its minutes went.
test: check browser ## everything: lint, typecheck, dbt parse, docs coverage and lineage, pytest (the cluster tests included)
	@$(BIN)/python tests/parts.py lint typecheck parse docs-check pytest

test-fast: check ## the quick loop: lint, typecheck, parse, docs checks, the tests that start no Spark, the package's integration tests
	@$(BIN)/python tests/parts.py lint typecheck parse docs-check pytest-fast

# The docs-site test opens the generated docs in Debian's Chromium (a downloaded browser cannot
# run here). Installed from Debian's packages when missing (as root, or through sudo).
CHROMIUM ?= /usr/bin/chromium
browser: ## install Debian's chromium for the docs-site browser test, when missing
	@test -x $(CHROMIUM) || { \
	  echo "Installing Debian's chromium (for the docs-site browser test)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@test -x $(CHROMIUM) || { echo "make: no $(CHROMIUM): install Debian's chromium (apt-get install chromium)"; exit 1; }

lint: setup ## sqlfluff on the SQL (sparksql), ruff on the Python
	$(BIN)/sqlfluff lint models tests/dbt
	$(BIN)/ruff check scripts tests packages conftest.py
	$(BIN)/ruff format --check scripts tests packages conftest.py

typecheck: setup ## mypy on the Python package (settings in pyproject.toml)
	$(BIN)/mypy

# dbt parse starts no Spark: the virtualenv is all it needs, never the fast start (so a check
# run in a copy of the project with this VENV never rebuilds it under others). Parsed whole:
# dbt's partial parsing was seen to drop the singular tests' descriptions from the manifest after
# a models' YAML changed, and the docs check then reported them undocumented.
parse: $(STAMP) $(DEPS) ## dbt parse with warnings as errors
	$(BIN)/dbt --warn-error parse --quiet --no-partial-parse

docs-check: parse ## fail on anything undocumented, or a lineage picture that is not current
	$(BIN)/kappa-shop docs-coverage --catalog no
	$(BIN)/kappa-shop lineage --check

lineage: parse ## redraw docs/lineage.svg (the README's picture of the DAG) from the manifest
	$(BIN)/kappa-shop lineage

# The tests' class archive (tests/jvm_archive.py, docs/testing.md "The tests' JVMs"): Spark's
# classes archived once per virtualenv, which every Spark of a pytest run maps (the root
# conftest.py points PYSPARK_SUBMIT_ARGS at it). For the tests' short-lived JVMs only: `make
# run`, `make bench` and kappa-shop never use it.
TEST_ARCHIVE := $(abspath $(VENV))/test-jvm/spark-test-jvm.conf
$(TEST_ARCHIVE): $(STAMP) tests/jvm_archive.py scripts/kappa_shop/runtime/class_archive.py
	@echo "Building the tests' class archive into $(dir $@) (about a minute)"
	@$(BIN)/python tests/jvm_archive.py $(dir $@) >$(VENV)/test-jvm.log 2>&1 || \
	  { tail -n 20 $(VENV)/test-jvm.log; exit 1; }

PACKAGE_TESTS := packages/kappa/integration_tests/tests
pytest: setup jdk $(TEST_ARCHIVE) ## the whole pytest suite, the cluster tests included: builds the project on a real Spark session
	$(BIN)/pytest

pytest-fast: setup
	$(BIN)/pytest -m "not spark" tests/pytest
	$(BIN)/pytest $(PACKAGE_TESTS)/test_contract.py $(PACKAGE_TESTS)/test_adoption.py \
	  --junitxml=target/test-times/pytest-fast-package.xml

test-cluster: check ## the cluster tests alone: a Spark cluster on 127.0.0.1, the proof on it, stopped
	@$(BIN)/python tests/parts.py pytest-cluster

pytest-cluster: setup $(TEST_ARCHIVE)
	$(BIN)/pytest -m cluster

SEEDS  ?= 1,2,3
EVENTS ?= 3000
ROUNDS ?= 5
DAYS   ?= 7
verify: check ## the proof for SEEDS (1,2,3), EVENTS (3000), ROUNDS (5) and DAYS (7): make verify SEEDS=7
	$(BIN)/kappa-shop verify --seeds $(SEEDS) --events $(EVENTS) --rounds $(ROUNDS) --days $(DAYS)

BENCH_EVENTS ?= 1000000
bench: check ## the benchmark at BENCH_EVENTS (1000000) events: make bench BENCH_EVENTS=10000000
	$(BIN)/kappa-shop bench --events $(BENCH_EVENTS)

docs-serve: setup ## serve the generated docs on http://127.0.0.1:8080
	@test -f target/index.html || { echo "make: no docs yet; run 'make run' first"; exit 1; }
	$(BIN)/dbt docs serve --host 127.0.0.1 --port 8080 --no-browser

BASE ?= main
slim-ci: check ## build and test only what changed since BASE (main): make slim-ci BASE=main
	$(BIN)/kappa-shop slim-ci --base-ref $(BASE)

dbt: setup ## run any dbt command: make dbt ARGS="build --select sessions"
	$(BIN)/dbt $(ARGS)

clean: ## remove the warehouse, metastore, dbt target and logs
	rm -rf spark-warehouse metastore_db target logs derby.log data .pytest_cache

distclean: clean ## also remove the virtualenv
	rm -rf $(VENV)

lock: ## re-resolve the newest allowed versions into constraints.txt (review the diff)
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet pip==$(PIP_VERSION) setuptools
	.venv-lock/bin/pip install --quiet -e '.[dev]'
	{ head -n 2 constraints.txt; .venv-lock/bin/pip freeze --exclude-editable | grep -v '^-e'; \
	  .venv-lock/bin/pip freeze --all | grep '^setuptools=='; } | sort -u -k1,1 > constraints.new
	mv constraints.new constraints.txt && rm -rf .venv-lock
