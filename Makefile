# The two commands: `make run` and `make test`. Both create the virtualenv on first use.
# (`make test-cluster` runs the cluster tests, which `make test` leaves out: README, "Tests".)
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
.PHONY: help setup check browser run test test-cluster lint parse docs-check lineage pytest verify \
	docs-serve bench slim-ci dbt clean distclean lock

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(STAMP): constraints.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null || \
	  { echo "make: Python 3.11 is required as '$(PYTHON)' (set PYTHON=/path/to/python3.11)"; exit 1; }
	@echo "Setting up $(VENV) (the first time downloads and builds PySpark, ~450 MB: a few minutes)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check pip==$(PIP_VERSION)
	$(BIN)/pip install --quiet -c constraints.txt setuptools
	$(BIN)/pip install --quiet --no-build-isolation -c constraints.txt -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# Hadoop's local file system without a `chmod` process for every file and directory Spark
# writes (java/; README, "Why a jar of our own"): compiled against the Hadoop of the PySpark
# wheel, and used by the embedded targets (profiles.yml) through KAPPA_SHOP_HADOOP_JAR. Needs
# the JDK's javac and jar, installed from Debian's packages when missing.
HADOOP_JAR   := $(VENV)/jars/kappa-shop-hadoop.jar
JAVA_SOURCES := $(sort $(wildcard java/kappa_shop/*/*.java))
export KAPPA_SHOP_HADOOP_JAR ?= $(CURDIR)/$(HADOOP_JAR)

$(HADOOP_JAR): $(STAMP) $(JAVA_SOURCES)
	@command -v javac >/dev/null && command -v jar >/dev/null || { \
	  echo "Installing Debian's JDK 17 (javac, jar) to compile java/"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; }
	@rm -rf $(VENV)/jars && mkdir -p $(VENV)/jars/classes
	javac --release 17 -d $(VENV)/jars/classes \
	  -cp "$$($(BIN)/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars/*" \
	  $(JAVA_SOURCES)
	jar cf $@ -C $(VENV)/jars/classes .

# A class-data sharing archive of Spark's classes: every embedded Spark (dbt, kappa-shop,
# the tests) maps them from it instead of loading them from the jars, and starts about 7 s
# faster (kappa_shop/class_archive.py; README, "A faster start"). The embedded targets use
# it through these two variables (profiles.yml); a JVM that cannot use it starts as usual.
CLASS_ARCHIVE := $(VENV)/jars/kappa-shop-classes.jsa
export KAPPA_SHOP_CLASS_ARCHIVE ?= $(CURDIR)/$(CLASS_ARCHIVE)
export KAPPA_SHOP_SPARK_JARS ?= $(CURDIR)/$(VENV)/lib/python3.11/site-packages/pyspark/jars

$(CLASS_ARCHIVE): $(HADOOP_JAR) profiles.yml
	@echo "Writing $@: Spark's classes for a faster start (about a minute)"
	$(BIN)/python -m kappa_shop.class_archive $@ 2>$(VENV)/jars/class-archive.log || \
	  { tail -n 20 $(VENV)/jars/class-archive.log; exit 1; }

# (`make ... KAPPA_SHOP_CLASS_ARCHIVE=`: no archive written or used, for a JVM that cannot write one)
setup: $(STAMP) $(HADOOP_JAR) $(if $(KAPPA_SHOP_CLASS_ARCHIVE),$(CLASS_ARCHIVE)) ## create the virtualenv, install the pinned dependencies, build java/ and the class archive

check: setup ## check the machine: Java 17 for Spark
	@$(BIN)/kappa-shop check

run: check ## load the sample log, dbt build, dbt docs generate, print a summary
	$(BIN)/kappa-shop build

test: check browser lint parse docs-check pytest ## lint, dbt parse, docs coverage and lineage, pytest (all but the cluster tests)

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
	$(BIN)/ruff check scripts tests
	$(BIN)/ruff format --check scripts tests

# dbt parse starts no Spark: the virtualenv is all it needs, not the jar or the class archive
# (so a check run in a copy of the project with this VENV never rebuilds them under others)
parse: $(STAMP) ## dbt parse with warnings as errors
	$(BIN)/dbt --warn-error parse --quiet

docs-check: parse ## fail on anything undocumented, or a lineage picture that is not current
	$(BIN)/kappa-shop docs-coverage --catalog no
	$(BIN)/kappa-shop lineage --check

lineage: parse ## redraw docs/lineage.svg (the README's picture of the DAG) from the manifest
	$(BIN)/kappa-shop lineage

pytest: setup ## the pytest suite but the cluster tests: builds the project on a real Spark session
	$(BIN)/pytest -m "not cluster"

test-cluster: check ## the cluster tests: a Spark cluster on 127.0.0.1, the proof on it, stopped
	$(BIN)/pytest -m cluster

SEEDS  ?= 1,2,3
EVENTS ?= 3000
ROUNDS ?= 5
DAYS   ?= 2
verify: check ## the proof for SEEDS (1,2,3), EVENTS (3000), ROUNDS (5) and DAYS (2): make verify SEEDS=7
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
