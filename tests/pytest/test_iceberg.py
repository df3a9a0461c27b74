"""Apache Iceberg as the models' table format: the `local_iceberg` target, in a JVM of its own.

The suite's own Spark has Delta's catalog as Spark's session catalog, the place Iceberg's
session catalog takes too, so the Iceberg proof runs in a process of its own (conftest's
kappa_shop_sequence: `check`, the small proof, then a model switched to parquet and back, in
one JVM), in a copy of the project. Its tables are then read from their Iceberg metadata files
(JSON), without starting Spark again.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import SMALL_PROOF, TRACED_PATHS, copy_project, kappa_shop_sequence

from kappa_shop.runtime.dbt import Destination

pytestmark = pytest.mark.spark

TARGET = "local_iceberg"
# the model switched from Iceberg to parquet and back, in the proof's full-refresh schema
SWITCHED = "orders_daily"
# the serving schema whose views two switches point at the proof's Iceberg tables
SERVING = "iceberg_serving"
_PREFIX = f"verify_{SMALL_PROOF.seed}"
# what the two switches serve: two names on the full refresh's tables, then one of them on
# another table (of other columns) and the other name gone
SERVED = [
    {
        f"{SERVING}.orders_current": f"{_PREFIX}_full.orders_current",
        f"{SERVING}.orders_daily": f"{_PREFIX}_full.orders_daily",
    },
    {f"{SERVING}.orders_daily": f"{_PREFIX}_incremental.inventory_levels"},
]
# Run in the proof's JVM: the serving registry opened, then two switches of the serving views
# (kappa-shop's own, as a reprocess and a rollback make them), each followed by a line with
# where every view then points and the rows read through it and from its table
_SWITCHES = """
import json
from pyspark.sql import SparkSession
from kappa_shop.runtime.warehouse import SessionWarehouse
from kappa_shop.serving.versions import open_serving, switch, view_targets
warehouse = SessionWarehouse(SparkSession.builder.getOrCreate(), "local_iceberg")
open_serving(warehouse, SERVING)
for version, relations in enumerate(SWITCHES, start=1):
    switch(warehouse, SERVING, version, relations)
    count = lambda name: warehouse.sql(f"select count(*) as n from {name}")[0]["n"]
    print("switched: " + json.dumps({
        "views": view_targets(warehouse, [SERVING]),
        "rows": {name: [count(name), count(table)] for name, table in relations.items()},
    }))
"""


def _differing_rows(schema: str, other: str, model: str) -> str:
    """A query of the rows of `model` in one schema and not the other, either way, and of its
    rows: zero and many when the two tables are equal."""
    one, two = f"{schema}.{model}", f"{other}.{model}"
    return (
        f"select (select count(*) from {one}) as table_rows, count(*) as differing from ("
        f"(select * from {one} except all select * from {two}) union all "
        f"(select * from {two} except all select * from {one}))"
    )


@pytest.fixture(scope="module")
def iceberg_proof(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, str, str, list[str], str]:
    """The project copy, what `kappa-shop check --target local_iceberg` printed, what the
    small proof (the Delta proof's seed, scale, schedule and selector, without its repeats)
    printed on Iceberg, and what the format switches printed: the proof's full-refresh
    `orders_daily` built again as parquet (`dbt run --target local`, in the same JVM), compared
    with the incremental schema's, built again as Iceberg, compared again; and what two
    switches of serving views over the proof's tables printed (SERVED)."""
    root = copy_project(tmp_path_factory.mktemp("iceberg") / "kappa_shop")
    proof = SMALL_PROOF
    prefix = f"verify_{proof.seed}"
    # the vars that point dbt at the proof's full-refresh schema, as kappa-shop's own runs say it
    dbt_vars = json.dumps(Destination(TARGET, f"{prefix}_full", f"{prefix}_raw").dbt_vars())
    compare = [
        "dbt", "show", "--target", TARGET, "--output", "json", "--inline",
        _differing_rows(f"{prefix}_full", f"{prefix}_incremental", SWITCHED),
    ]  # fmt: skip

    def run_as(target: str) -> list[str]:
        return ["dbt", "run", "--target", target, "--select", SWITCHED, "--vars", dbt_vars]

    switches = "\n".join((f"SERVING = {SERVING!r}", f"SWITCHES = {json.dumps(SERVED)}", _SWITCHES))
    checked, proved, *switched, served = kappa_shop_sequence(
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
        run_as("local"),
        compare,
        run_as(TARGET),
        compare,
        ["python", switches],
        timeout=1800,
    )  # fmt: skip
    return root, checked, proved, switched, served


def _metadata(root: Path, schema: str, model: str) -> dict:
    """The current metadata of an Iceberg table of the warehouse (its highest version)."""
    files = sorted((root / "spark-warehouse" / f"{schema}.db" / model / "metadata").glob("*.json"))
    assert files, f"{schema}.{model} has no Iceberg metadata"
    return json.loads(files[-1].read_text())


def test_check_reports_iceberg(iceberg_proof):
    _, checked, *_ = iceberg_proof
    assert f"ok: target '{TARGET}': Apache Iceberg 1.10.0 in the session's Hive metastore" in (
        checked
    ), checked


def test_the_proof_passes_on_iceberg(iceberg_proof):
    _, _, proved, *_ = iceberg_proof
    seed = SMALL_PROOF.seed
    line = f"Proof PASSED (seed {seed}): {len(TRACED_PATHS)} of {len(TRACED_PATHS)} models equal"
    assert line in proved, proved[-3000:]
    assert "IDLE" not in proved and "NOT DIFFED" not in proved, proved[-3000:]


def test_every_run_of_a_model_is_one_iceberg_commit(iceberg_proof):
    """Every model of both schemas is an Iceberg table of format version 3 (the profile's table
    default); in the incremental schema each write of a model is one snapshot, on top of the one
    before (a rebuild's starts anew), and a days model's incremental snapshots replace some of
    its days, not all."""
    root, *_ = iceberg_proof
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


def _compared(printed: str) -> dict:
    """The one row `dbt show --output json` printed."""
    start = printed.rindex("{", 0, printed.index('"show"'))
    shown, _ = json.JSONDecoder().raw_decode(printed, start)
    [row] = shown["show"]
    return row


def test_a_model_leaves_iceberg_for_parquet_and_comes_back_with_its_rows(iceberg_proof):
    """Leaving Iceberg, the model's drop keeps the table's files (an Iceberg table is external
    to the metastore), which the package clears before the parquet table takes their place;
    coming back, parquet's drop removes its own. Both times the model is rebuilt whole, equal
    row for row to the same model built incrementally (the proof's other schema)."""
    *_, (to_parquet, as_parquet, to_iceberg, as_iceberg), _ = iceberg_proof
    prefix = f"verify_{SMALL_PROOF.seed}"
    cleared = f": the files of the Iceberg table it was ({prefix}_full.{SWITCHED}); the model"
    assert "Cleared " in to_parquet and cleared in to_parquet, to_parquet[-3000:]
    assert "Cleared " not in to_iceberg, to_iceberg[-3000:]
    for compared in (as_parquet, as_iceberg):
        row = _compared(compared)
        assert row["differing"] == 0 and row["table_rows"] > 0, row


def test_each_switch_replaces_the_serving_views_in_place(iceberg_proof):
    """Serving views over Iceberg tables, switched by kappa-shop's own switch: each name points
    at its new table and reads its rows, the names the new version lacks are gone. (With
    Iceberg's SQL extensions in the session, `create or replace view` over an existing view
    changed nothing and raised nothing: the second switch would still read `orders_daily`.)"""
    *_, served = iceberg_proof
    lines = [
        json.loads(line.removeprefix("switched: "))
        for line in served.splitlines()
        if line.startswith("switched: ")
    ]
    assert [line["views"] for line in lines] == SERVED, served[-3000:]
    for line in lines:
        for name, (through_the_view, in_the_table) in line["rows"].items():
            assert through_the_view == in_the_table > 0, (name, line)
    first, second = (line["rows"][f"{SERVING}.orders_daily"][0] for line in lines)
    assert first != second, lines
