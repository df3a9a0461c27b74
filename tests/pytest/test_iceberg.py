"""Apache Iceberg as the models' table format: the `local_iceberg` target, in a JVM of its own.

The suite's own Spark has Delta's catalog as Spark's session catalog, the place Iceberg's
session catalog takes too, so the Iceberg proof runs in a process of its own (conftest's
kappa_shop_sequence: `check`, then the small proof, in one JVM), in a copy of the project. Its
tables are then read from their Iceberg metadata files (JSON), without starting Spark again.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import SMALL_PROOF, TRACED_PATHS, copy_project, kappa_shop_sequence

pytestmark = pytest.mark.spark

TARGET = "local_iceberg"


@pytest.fixture(scope="module")
def iceberg_proof(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The project copy, what `kappa-shop check --target local_iceberg` printed, and what the
    small proof (the Delta proof's seed, scale, schedule and selector, without its repeats)
    printed on Iceberg."""
    root = copy_project(tmp_path_factory.mktemp("iceberg") / "kappa_shop")
    proof = SMALL_PROOF
    checked, proved = kappa_shop_sequence(
        root,
        ["check", "--target", TARGET],
        [
            "verify", "--target", TARGET, "--seeds", str(proof.seed),
            "--events", str(proof.events), "--rounds", str(proof.rounds),
            "--days", str(int(proof.days)), "--selector", str(proof.selector),
            "--data-tests", proof.data_tests,
            # no round built twice and no replay: Iceberg's writes are the statements Delta's
            # are, which the Delta proof repeats; what this one adds is the format
            "--no-repeats",
        ],
        timeout=1800,
    )  # fmt: skip
    return root, checked, proved


def _metadata(root: Path, schema: str, model: str) -> dict:
    """The current metadata of an Iceberg table of the warehouse (its highest version)."""
    files = sorted((root / "spark-warehouse" / f"{schema}.db" / model / "metadata").glob("*.json"))
    assert files, f"{schema}.{model} has no Iceberg metadata"
    return json.loads(files[-1].read_text())


def test_check_reports_iceberg(iceberg_proof):
    _, checked, _ = iceberg_proof
    assert f"ok: target '{TARGET}': Apache Iceberg 1.10.0 in the session's Hive metastore" in (
        checked
    ), checked


def test_the_proof_passes_on_iceberg(iceberg_proof):
    _, _, proved = iceberg_proof
    seed = SMALL_PROOF.seed
    line = f"Proof PASSED (seed {seed}): {len(TRACED_PATHS)} of {len(TRACED_PATHS)} models equal"
    assert line in proved, proved[-3000:]
    assert "IDLE" not in proved and "NOT DIFFED" not in proved, proved[-3000:]


def test_every_run_of_a_model_is_one_iceberg_commit(iceberg_proof):
    """Every model of both schemas is an Iceberg table of format version 3 (the profile's table
    default); in the incremental schema each write of a model is one snapshot, on top of the one
    before (a rebuild's starts anew), and a days model's incremental snapshots replace some of
    its days, not all."""
    root, _, _ = iceberg_proof
    seed = SMALL_PROOF.seed
    for schema in (f"verify_{seed}_incremental", f"verify_{seed}_full"):
        for model in TRACED_PATHS:
            assert _metadata(root, schema, model)["format-version"] == 3, (schema, model)
    for model in TRACED_PATHS:
        snapshots = _metadata(root, f"verify_{seed}_incremental", model)["snapshots"]
        # each write is one snapshot on top of the one before, a rebuild (`create or replace`:
        # three models are rebuilt alone in the proof, and their children after them) one that
        # starts anew; every model has incremental commits
        continued = [
            later.get("parent-snapshot-id") == earlier["snapshot-id"]
            for earlier, later in itertools.pairwise(snapshots)
        ]
        rebuilt = [later.get("parent-snapshot-id") is None for later in snapshots[1:]]
        assert all(a or b for a, b in zip(continued, rebuilt, strict=True)), (model, snapshots)
        assert any(continued), (model, snapshots)
    days = _metadata(root, f"verify_{seed}_incremental", "orders_daily")["snapshots"]
    partial = [
        snapshot["summary"]
        for snapshot in days[1:]
        if int(snapshot["summary"]["changed-partition-count"])
        < int(snapshot["summary"]["total-data-files"])
    ]
    assert partial, [snapshot["summary"] for snapshot in days]
