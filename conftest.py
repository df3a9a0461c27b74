"""What every pytest run of this repository shares (the shop's suite and the kappa package's
integration tests alike): a skipped test is a failure. Every test here runs here (Spark, Delta's
jars from `make setup`, the cluster, the broker, the browser); a test that skips has not proven
what it claims, so the run says which and fails, whatever else passed.

And every Spark the run starts (its own, and those of the processes its tests start) maps
Spark's classes from the suite's class archive when `make pytest` has built it
(tests/jvm_archive.py): a start-up option for the tests' short-lived JVMs, off for anything
else (docs/testing.md, "The tests' JVMs")."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

# the properties file of the suite's class archive, where `make pytest` builds it (Makefile:
# TEST_ARCHIVE; tests/jvm_archive.py writes it)
TEST_ARCHIVE = Path(sys.prefix) / "test-jvm" / "spark-test-jvm.conf"


def pytest_configure(config: pytest.Config) -> None:
    """Point PYSPARK_SUBMIT_ARGS at the suite's class archive, when it is built and neither
    PYSPARK_SUBMIT_ARGS of one's own nor the opt-in fast start (docs/fast-start.md) says
    otherwise."""
    chosen = "PYSPARK_SUBMIT_ARGS" in os.environ or os.environ.get("KAPPA_SHOP_FAST_START") == "1"
    if TEST_ARCHIVE.is_file() and not chosen:
        os.environ["PYSPARK_SUBMIT_ARGS"] = shlex.join(
            ["--properties-file", str(TEST_ARCHIVE), "--load-spark-defaults", "pyspark-shell"]
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        terminalreporter.write_line(
            f"FAILED: {len(skipped)} test(s) skipped, and nothing may skip here "
            "(conftest.py): " + ", ".join(sorted({report.nodeid for report in skipped})),
            red=True,
        )
