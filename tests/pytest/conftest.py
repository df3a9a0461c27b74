"""Fixtures that build a private copy of the project on a real Spark session.

Spark's embedded Derby metastore admits one process per directory, so every pytest run builds
its own copy of the project in a temporary directory. dbt runs in this process (dbtRunner),
which starts one SparkSession and reuses it for every later dbt command and query.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kappa_shop.dbt import DbtProject
from kappa_shop.pipeline import BuildSummary, build

REPO_ROOT = Path(__file__).resolve().parents[2]
NOT_COPIED = shutil.ignore_patterns(
    ".venv*", ".git", "target", "logs", "spark-warehouse", "metastore_db", "derby.log",
    "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info",
)  # fmt: skip


@dataclass
class BuiltProject:
    """A built copy of the project: where it is, how to run dbt in it, what the build said."""

    root: Path
    dbt: DbtProject
    summary: BuildSummary


@pytest.fixture(scope="session")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository whose metastore and warehouse no other process touches."""
    destination = tmp_path_factory.mktemp("project") / "kappa_shop"
    shutil.copytree(REPO_ROOT, destination, ignore=NOT_COPIED)
    return destination


@pytest.fixture(scope="session")
def built_project(project_copy: Path) -> Iterator[BuiltProject]:
    """The copy built exactly as `make run` builds it: sample log, dbt build, docs."""
    previous_directory = Path.cwd()
    previous_environment = dict(os.environ)
    os.chdir(project_copy)  # Spark resolves the warehouse and metastore against the cwd
    os.environ["DBT_PROFILES_DIR"] = str(project_copy)
    os.environ["SPARK_CONF_DIR"] = str(project_copy / "conf")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    (project_copy / "logs").mkdir(exist_ok=True)
    project = DbtProject(root=project_copy)
    try:
        yield BuiltProject(root=project_copy, dbt=project, summary=build(project))
    finally:
        os.chdir(previous_directory)
        os.environ.clear()
        os.environ.update(previous_environment)


@pytest.fixture(scope="session")
def spark(built_project: BuiltProject):
    """The SparkSession dbt started for the built project, for reading its tables directly."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()
