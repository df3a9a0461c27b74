"""Fixtures of the package's integration tests: one copy of the package per pytest process,
seeded once, driven through dbt in this process (contract_harness)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from contract_harness import PACKAGE_ROOT, Project


@pytest.fixture(scope="session")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """The package and its integration project copied to a directory of their own (where
    this process's Spark keeps its metastore if it starts here), installed and seeded."""
    root = tmp_path_factory.mktemp("kappa_package")
    previous_directory = Path.cwd()
    previous_environment = dict(os.environ)
    os.chdir(root)  # Spark resolves its warehouse and metastore against the cwd
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        project = Project.copy_of(PACKAGE_ROOT, root / "kappa", prefix="kit")
        project.seed()
        yield project
    finally:
        os.chdir(previous_directory)
        os.environ.clear()
        os.environ.update(previous_environment)
