"""Delta Lake, the `local_delta` target: the proof on Delta tables, each run
of a model one version of its table (readable by time travel), and the jars Spark fetches of
the version the installed delta-spark package pins.

Everything here runs in the suite's own SparkSession, which conftest starts with the
local_delta target's settings when Delta's jars are at hand (they come from Maven Central
through Spark's Ivy, cached in ~/.ivy2.5.2 after the first fetch); on a machine that has
neither, the Spark tests here skip with the reason.
"""

from __future__ import annotations

import json
import re
from importlib import metadata

import pytest
from conftest import (
    DELTA_TARGET,
    REPO_ROOT,
    SMALL_PROOF,
    TRACED_PATHS,
)

from kappa_shop.errors import KappaShopError
from kappa_shop.proof.verify import format_report
from kappa_shop.runtime.contract import LEDGER_TABLE
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.delta import check_delta_pin, delta_version
from kappa_shop.runtime.spark import profile_output
from kappa_shop.runtime.warehouse import checksums
from kappa_shop.serving.pipeline import build

TARGET = DELTA_TARGET
# (conftest's delta_proof: SMALL_PROOF on Delta, one seed; the proof's schedules are tested for
# more on parquet, test_verify; test_cluster compares the cluster's tables with these)
SEED = SMALL_PROOF.seed
# the models whose Delta history is read: one of each mode
BATCHES_MODEL = "stg_orders__order_event_deliveries"
HISTORY_MODELS = (
    BATCHES_MODEL,
    "orders_daily",  # days
    "orders_current",  # keys
    "users_history",  # keys, several rows per key
)


def _history(spark, schema: str, models) -> dict:
    """Each model's table format, partition columns and Delta history, the schema's ledger,
    and what time travel reads of a batches model."""
    report = {}
    for model in models:
        detail = spark.sql(f"describe detail {schema}.{model}").collect()[0]
        history = spark.sql(f"describe history {schema}.{model}").collect()
        report[model] = {
            "format": detail["format"],
            "partition_columns": list(detail["partitionColumns"]),
            "history": sorted(
                (
                    {
                        "version": row["version"],
                        "operation": row["operation"],
                        "predicate": (row["operationParameters"] or {}).get("predicate"),
                    }
                    for row in history
                ),
                key=lambda entry: entry["version"],
            ),
        }
    ledger = spark.sql(
        "select model_name, first_batch_id, last_batch_id, refresh_mode, recomputed_partitions "
        f"from {schema}.{LEDGER_TABLE}"
    ).collect()
    report["_ledger"] = [row.asDict() for row in ledger]

    def rows_by_batch(version: str = "") -> dict[str, int]:
        """The batches model's rows per ingestion batch (at a version, with time travel)."""
        return {
            str(row["_ingestion_batch_id"]): row["n"]
            for row in spark.sql(
                f"select _ingestion_batch_id, count(*) as n from {schema}.{BATCHES_MODEL} "
                f"{version} group by _ingestion_batch_id"
            ).collect()
        }

    report["_version_0_rows_by_batch"] = rows_by_batch("version as of 0")
    report["_rows_by_batch"] = rows_by_batch()
    return report


SUMMARY_LINE = re.compile(r"^  (\w+)\s+([\d,]+) rows  \S+ \((\w+)\)$")


def _partition_values(predicate: str) -> set[str]:
    """The values a `replace where` predicate names, as the ledger records them: `(session_date
    IN (DATE '2024-03-01', ...))` gives {'2024-03-01', ...}, `(order_bucket IN (0L, 3L))` {'0',
    '3'}; Delta writes a list of one value as an equality, `(order_bucket = 6L)` {'6'}."""
    listed = re.fullmatch(r"\(\w+ IN \((.*)\)\)", predicate) or re.fullmatch(
        r"\(\w+ = (.*)\)", predicate
    )
    assert listed, predicate
    return {
        re.sub(r"^DATE '(.*)'$|^(\d+)L$", lambda match: match[1] or match[2], value.strip())
        for value in listed[1].split(",")
    }


def _delta_settings() -> dict:
    return profile_output(REPO_ROOT, TARGET)["server_side_parameters"]


@pytest.fixture(scope="module")
def delta_history(delta_proof, spark) -> dict:
    """What _history reads from the Delta proof's incremental schema."""
    return _history(spark, f"verify_{SEED}_incremental", HISTORY_MODELS)


def test_the_profile_fetches_the_installed_delta_spark_version():
    version = delta_version(_delta_settings())
    assert version is not None
    assert version == metadata.version("delta-spark")
    assert check_delta_pin(_delta_settings(), TARGET) == version
    # and a profile that names another version is refused before Spark starts
    other = {"spark.jars.packages": "io.delta:delta-spark_2.13:3.2.0"}
    with pytest.raises(KappaShopError, match="make the two versions the same"):
        check_delta_pin(other, TARGET)
    assert check_delta_pin({"spark.master": "local[2]"}, "local") is None


def test_check_reports_delta_on_the_delta_target(delta_proof):
    assert f"ok: target '{TARGET}': Delta Lake {metadata.version('delta-spark')}" in (
        delta_proof.checked
    )


def test_the_proof_passes_on_delta(delta_proof):
    report = delta_proof.report
    print(format_report(report))
    assert report.passed, format_report(report)
    # the models of traced_paths, each equal to its full refresh
    assert sorted(diff.model for diff in report.diffs) == TRACED_PATHS
    assert all(diff.equal and diff.full_rows > 0 for diff in report.diffs), report.diffs
    # every data test of those models ran on the Delta tables of the full refresh (and the
    # diff found the incremental tables equal to them)
    labels = [label for label, _ in report.data_tests_run]
    counts = dict(report.data_tests_run)
    assert labels[-2:] == ["replay of the last runs", "full refresh"], labels
    listed = delta_proof.project.invoke(
        "ls", "--quiet", "--resource-type", "test", "--selector", SMALL_PROOF.selector,
        "--output", "name",
    )  # fmt: skip
    assert counts["replay of the last runs"] == 0, counts
    assert counts["full refresh"] == len(list(listed)) > 0, counts


def test_every_model_is_a_delta_table_and_each_run_one_commit(delta_history):
    report = delta_history
    ledger = report["_ledger"]
    rebuild, write = "CREATE OR REPLACE TABLE AS SELECT", "WRITE"
    for model in HISTORY_MODELS:
        entry = report[model]
        assert entry["format"] == "delta", model
        operations = [step["operation"] for step in entry["history"]]
        # built in full with `create or replace` (one commit), then one `replace where` per
        # run that had something to replace: no drops, no second write in a run
        assert operations[0] == rebuild, (model, operations)
        assert set(operations) <= {rebuild, write}, (model, operations)
        partition = entry["partition_columns"][0]
        writes = [step for step in entry["history"] if step["operation"] == write]
        for step in writes:
            # replace where: the batches, days or buckets of that run, nothing else
            assert step["predicate"] and partition in step["predicate"], (model, step)
        incremental_runs = [
            row
            for row in ledger
            if row["model_name"] == model and row["refresh_mode"] == "incremental"
        ]
        if model == BATCHES_MODEL:
            # batches mode: every run whose new batches hold rows of the model replaces
            # exactly those batches (one whose batches hold none of its topic writes nothing)
            with_rows = [
                row
                for row in incremental_runs
                if any(
                    report["_rows_by_batch"].get(str(batch))
                    for batch in range(row["first_batch_id"], row["last_batch_id"] + 1)
                )
            ]
            assert len(writes) >= len(with_rows) > 0, (model, operations, incremental_runs)
            continue
        # days and keys: a run replaces the partitions the ledger says it recomputed (a run
        # whose batches touch none of them writes nothing)
        recomputing = [row for row in incremental_runs if row["recomputed_partitions"]]
        assert len(writes) >= len(recomputing), (model, operations, recomputing)
        replaced = [_partition_values(step["predicate"]) for step in writes]
        for row in recomputing:
            assert set(row["recomputed_partitions"]) in replaced, (model, row, writes)
        if model != "users_history":  # (a small log's later batches may hold no profile change)
            assert recomputing, (model, operations, incremental_runs)


def test_time_travel_reads_a_table_as_an_earlier_run_left_it(delta_history):
    # version 0 of a batches model is its first build: exactly the rows of the batches that
    # build consumed, batches 1 to some k, each whole (rows of a batch never change
    # afterwards, so each has its rows of today); the later runs added later batches. (The
    # ledger's row of the first build is compacted away by the proof's later runs.)
    report = delta_history
    first_build = report["_version_0_rows_by_batch"]
    through = max(map(int, first_build))
    assert first_build == {
        batch: rows for batch, rows in report["_rows_by_batch"].items() if int(batch) <= through
    }
    assert sum(first_build.values()) > 0
    assert sum(report["_rows_by_batch"].values()) > sum(first_build.values())


def test_a_changed_column_stops_an_incremental_run_on_delta_too(delta_proof, spark):
    # on Delta a batches model's `replace where` selected the table's columns, so a column added
    # to the model was left out without a word; now the run stops and writes no version
    schema, model = f"verify_{SEED}_incremental", "stg_orders__order_events"
    proof = delta_proof.project
    project = proof.elsewhere(schema, f"verify_{SEED}_raw")
    path = project.root / "models" / "staging" / "orders" / f"{model}.sql"

    def run() -> dict:
        result = project.invoke("run", "--select", model, "--quiet", tolerate_failures=True)
        return {
            "statuses": {i.node.name: [str(i.status), i.message or ""] for i in result.results},
            "columns": spark.table(f"{schema}.{model}").columns,
            "versions": spark.sql(f"describe history {schema}.{model}").count(),
        }

    original = path.read_text()
    before = run()  # as it is: the check passes (nothing new to write)
    try:
        path.write_text(
            original.replace("select * from final", "select *, true as is_reviewed from final")
        )
        after = run()
    finally:
        path.write_text(original)
    assert before["statuses"][model][0] == "success", before
    status, message = after["statuses"][model]
    assert status == "error"
    assert "new in the model: is_reviewed (boolean)" in message, message
    assert f"dbt build --full-refresh --select {model}+" in message, message
    assert "is_reviewed" not in after["columns"]
    assert after["versions"] == before["versions"]


VERSION = "delta_switch__v1"


@pytest.fixture(scope="module")
def format_switch(spark, project_copy, tmp_path_factory):
    """One schema built from the seed log on parquet, then on Delta (every data test and the
    docs too; the unit tests, which read fixtures, are test_sample_pipeline's), then on
    parquet again (the parquet builds' tests left out: test_sample_pipeline runs them on
    parquet, and here the rows are what is compared): each build's summary, the formats after
    the second, the tests `dbt ls` names and the docs' catalog (generated into a target path of
    its own: the project copy's is the sample's)."""
    parquet, delta = (
        project.elsewhere("delta_switch", "delta_switch_raw")
        for project in (
            DbtProject(root=project_copy, profiles_dir=project_copy),
            DbtProject(root=project_copy, target=TARGET, profiles_dir=project_copy),
        )
    )
    listed = delta.invoke("ls", "--quiet", "--resource-type", "test", "--output", "name")
    tests = list(listed)
    builds = {}
    docs = tmp_path_factory.mktemp("delta_switch_docs")
    sums = {}  # each build's row count and checksum of every column, per model

    def checksummed(label: str) -> None:
        names = [f"{VERSION}.{table.name}" for table in builds[label].tables]
        sums[label] = checksums(parquet.warehouse(), names)

    builds["parquet"] = build(parquet, docs=False, log_source="seeds", tests=False)
    checksummed("parquet")
    builds["delta"] = build(delta, docs=False, log_source="seeds")
    checksummed("delta")
    delta.invoke("docs", "generate", "--select", "fqn:*", "source:*", "--target-path", str(docs))
    models = sorted(table.name for table in builds["delta"].tables)
    # (the tables of the served version, version 1: delta_switch.<model> are views on them)
    formats = {
        model: {
            "format": spark.sql(f"describe detail {VERSION}.{model}").collect()[0]["format"],
            "operations": [
                row["operation"]
                for row in spark.sql(f"describe history {VERSION}.{model}").collect()
            ],
        }
        for model in models
    }
    builds["parquet again"] = build(parquet, docs=False, log_source="seeds", tests=False)
    checksummed("parquet again")
    return docs, builds, formats, tests, sums


def test_switching_the_format_rebuilds_each_model_once_and_loses_nothing(format_switch):
    docs, builds, formats, tests, sums = format_switch
    rows = {label: {t.name: t.rows for t in summary.tables} for label, summary in builds.items()}
    parquet = rows["parquet"]
    assert len(parquet) == 35 and sum(parquet.values()) > 0
    # on Delta: every model rebuilt once as a Delta table (a parquet table cannot be written in
    # place), with the same rows (the same checksum of every column of every row), every data
    # test passing, and the docs' catalog
    assert rows["delta"] == parquet
    assert len(sums["parquet"]) == 35
    assert sums["delta"] == sums["parquet"], {
        name: (sums["parquet"][name], sums["delta"][name])
        for name in sums["parquet"]
        if sums["delta"][name] != sums["parquet"][name]
    }
    assert {model: entry["format"] for model, entry in formats.items()} == dict.fromkeys(
        parquet, "delta"
    )
    # (one version: the switch's rebuild, nothing written before or after it in that build)
    assert all(
        entry["operations"] == ["CREATE OR REPLACE TABLE AS SELECT"] for entry in formats.values()
    ), formats
    # (every data test the project has, as `dbt ls` names them, passed on Delta)
    passed = builds["delta"].tests_passed
    assert passed == len(tests) > 100, (passed, len(tests))
    catalog = json.loads((docs / "catalog.json").read_text())
    assert "model.kappa_shop.sessions" in catalog["nodes"]
    # and back to parquet: the same rows again
    assert rows["parquet again"] == parquet
    assert sums["parquet again"] == sums["parquet"]
    for label in ("parquet", "parquet again"):
        assert builds[label].tests_passed is None
