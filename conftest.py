"""What every pytest run of this repository shares (the shop's suite and the kappa package's
integration tests alike): a skipped test is a failure. Every test here runs here (Spark, Delta's
jars from `make setup`, the cluster, the broker, the browser); a test that skips has not proven
what it claims, so the run says which and fails, whatever else passed."""

from __future__ import annotations

import pytest


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
