"""The suite's own rules, tried on real pytest runs: nothing skips, and Delta's jars (and
Iceberg's runtime, for the Iceberg tests) are a prerequisite named in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from conftest import REPO_ROOT


def run_pytest(arguments: list[str], cwd: Path, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments],
        cwd=cwd,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_skipped_test_fails_the_run_and_is_named(tmp_path):
    shutil.copy(REPO_ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    assert 1 + 1 == 2\n\n"
        "def test_gives_up():\n    pytest.skip('no broker here')\n"
    )
    result = run_pytest(["-q", "test_some.py"], tmp_path)
    assert result.returncode == 1, result.stdout
    assert "1 passed, 1 skipped" in result.stdout
    assert (
        "FAILED: 1 test(s) skipped, and nothing may skip here (conftest.py): "
        "test_some.py::test_gives_up"
    ) in result.stdout
    # the same suite without the skip passes: the rule is about skips, not the suite
    (tmp_path / "test_some.py").write_text("def test_runs():\n    assert 1 + 1 == 2\n")
    assert run_pytest(["-q", "test_some.py"], tmp_path).returncode == 0


def test_without_deltas_jars_the_spark_tests_stop_in_one_line(tmp_path):
    """Delta's jars are looked up in Ivy's cache under the home directory: an empty home has
    none, and collecting a test that starts Spark stops before anything runs."""
    result = run_pytest(
        ["--collect-only", "-q", "tests/pytest/test_delta.py"], REPO_ROOT, HOME=str(tmp_path)
    )
    assert result.returncode == 4, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if "Delta Lake's jars" in line]
    assert len(lines) == 1, result.stdout
    assert f"are not in Ivy's cache ({tmp_path}/.ivy2.5.2)" in lines[0]
    assert "run `make setup`, which fetches them" in lines[0]
    # the tests that start no Spark still run without them
    fast = run_pytest(
        ["--collect-only", "-q", "-m", "not spark", "tests/pytest/test_generator.py"],
        REPO_ROOT,
        HOME=str(tmp_path),
    )
    assert fast.returncode == 0, fast.stdout + fast.stderr


def test_without_icebergs_runtime_the_iceberg_tests_stop_in_one_line(tmp_path):
    """With Delta's jars in Ivy's cache but not Iceberg's runtime, collecting the Iceberg tests
    stops before anything runs, naming the runtime (only the file's presence is looked at)."""
    from kappa_shop.runtime import delta

    jars = tmp_path / ".ivy2.5.2" / "jars"
    jars.mkdir(parents=True)
    (jars / delta.cached_jar(metadata.version("delta-spark")).name).touch()
    result = run_pytest(
        ["--collect-only", "-q", "tests/pytest/test_iceberg.py"], REPO_ROOT, HOME=str(tmp_path)
    )
    assert result.returncode == 4, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if "Apache Iceberg's runtime" in line]
    assert len(lines) == 1, result.stdout
    assert "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.0" in lines[0]
    assert f"is not in Ivy's cache ({tmp_path}/.ivy2.5.2)" in lines[0]
    # and test_delta's collection, which needs no Iceberg, goes on
    delta_only = run_pytest(
        ["--collect-only", "-q", "tests/pytest/test_delta.py"], REPO_ROOT, HOME=str(tmp_path)
    )
    assert delta_only.returncode == 0, delta_only.stdout + delta_only.stderr
