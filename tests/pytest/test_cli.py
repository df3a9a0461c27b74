"""The command line: help that explains itself, and one clear line for ordinary mistakes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _kappa_shop(*arguments: str, path: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    environment["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "kappa_shop", *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=120,
        check=False,
    )


def test_missing_java_is_one_line_saying_what_to_install(tmp_path):
    result = _kappa_shop("build", path=str(tmp_path))

    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Java 17" in lines[0]
    assert "install" in lines[0]


def test_too_old_java_is_refused_with_its_version(tmp_path):
    fake_java = tmp_path / "java"
    fake_java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.21\" 2023-10-17' >&2\n")
    fake_java.chmod(0o755)

    result = _kappa_shop("check", path=str(tmp_path))

    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "is Java 11" in result.stderr


def test_check_reports_the_java_found():
    result = _kappa_shop("check", path=os.environ["PATH"])

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: Java ")


def test_outside_a_project_is_one_line(tmp_path):
    result = _kappa_shop("--project-dir", str(tmp_path), "check", path=os.environ["PATH"])

    assert result.returncode == 1
    assert "no dbt_project.yml" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_explains_every_subcommand_and_option():
    top = _kappa_shop("--help", path=os.environ["PATH"])
    assert top.returncode == 0
    # argparse formats help with %-placeholders: a stray % in a help text crashes --help
    subcommands = ("check", "generate", "deliver", "ingest", "verify", "build", "cluster")
    subcommands += ("reprocess", "rollback", "versions")
    for subcommand in (*subcommands, "docs-coverage", "lineage", "slim-ci"):
        assert subcommand in top.stdout
        result = _kappa_shop(subcommand, "--help", path=os.environ["PATH"])
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: kappa-shop {subcommand}")
        assert "--help" in result.stdout
    build = _kappa_shop("build", "--help", path=os.environ["PATH"])
    for option in ("--target", "--no-docs", "--unit-tests"):
        assert option in build.stdout
    # the data tests skipped, or the unit tests added: not both
    both = _kappa_shop("build", "--no-tests", "--unit-tests", path=os.environ["PATH"])
    assert both.returncode == 2 and "not allowed with argument" in both.stderr, both.stderr


def test_bad_arguments_and_configuration_are_one_line_each(tmp_path):
    # none of these starts Spark: each is refused up front, in one line, without a traceback
    landing = tmp_path / "landing"
    partition = landing / "topics" / "web_events" / "partition=0"
    partition.mkdir(parents=True)
    (partition / "web_events+0+0.jsonl").write_text('{"a": 1}\n')
    (partition / "web_events+0+1.jsonl").symlink_to(tmp_path / "gone.jsonl")  # unreadable
    cases = {
        ("build", "--target", "nope"): "unknown target 'nope': profiles.yml defines cluster, "
        "cluster_delta, local",
        ("generate", "--out", str(tmp_path / "log"), "--events", "-5"): (
            "--events must be at least 1 (got -5)"
        ),
        ("generate", "--out", str(tmp_path / "log"), "--days", "0"): "--days must be positive",
        ("ingest", "--landing", str(tmp_path / "missing")): (
            f"landing directory {tmp_path / 'missing'} does not exist"
        ),
        ("ingest", "--landing", str(tmp_path)): "has no topics/ folder: not a landing zone",
        ("ingest", "--landing", str(landing)): (
            "cannot read 1 landed file(s) in "
            f"{landing}: topics/web_events/partition=0/web_events+0+1.jsonl (No such file or "
            "directory). Nothing was ingested"
        ),
        ("deliver", "--log", str(tmp_path / "no-log"), "--landing", str(landing), "--all"): (
            str(tmp_path / "no-log")
        ),
        ("slim-ci", "--state", str(tmp_path)): "no manifest.json in",
        ("versions", "--drop-old", "--keep", "0"): (
            "--keep 0: the served version is always kept (at least 1)"
        ),
        ("verify", "--selector", "nope", "--work-dir", str(tmp_path / "proof")): (
            "--selector nope: no such selector in selectors.yml (it defines: derived, sample_log, "
            "one_model_per_mode, traced_paths)"
        ),
    }
    for arguments, message in cases.items():
        result = _kappa_shop(*arguments, path=os.environ["PATH"])

        assert result.returncode == 1, (arguments, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (arguments, result.stderr)
        assert lines[0].startswith("kappa-shop: error: "), (arguments, lines)
        assert message in lines[0], (arguments, lines)
