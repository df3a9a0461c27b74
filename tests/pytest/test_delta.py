"""Delta Lake, the `local_delta` target: the proof on Delta tables, each run
of a model one version of its table (readable by time travel), and the jars Spark fetches of
the version the installed delta-spark package pins.

Delta's jars come from Maven Central through Spark's Ivy (cached in ~/.ivy2.5.2 after the
first fetch): on a machine that has neither, the Spark tests here skip with the reason.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
from conftest import REPO_ROOT, copy_project, kappa_shop_in, run_in

from kappa_shop.delta import check_delta_pin, delta_version, jars_unavailable
from kappa_shop.errors import KappaShopError
from kappa_shop.spark import profile_output

TARGET = "local_delta"
# (one seed: the proof's schedules are tested for more on parquet, test_verify)
SEEDS = (6,)
# What a subprocess in the proof's project copy reads from the incremental schema of the last
# seed, with Spark on the Delta target: each model's format and its table history.
HISTORY_PROBE = """
import json, sys
from pathlib import Path
from kappa_shop.spark import session_for
spark = session_for(Path.cwd(), "local_delta")
schema = sys.argv[1]
models = json.loads(sys.argv[2])
report = {}
for model in models:
    detail = spark.sql(f"describe detail {schema}.{model}").collect()[0]
    history = spark.sql(f"describe history {schema}.{model}").collect()
    report[model] = {
        "format": detail["format"],
        "partition_columns": list(detail["partitionColumns"]),
        "history": sorted(
            ({"version": row["version"], "operation": row["operation"],
              "predicate": (row["operationParameters"] or {}).get("predicate")}
             for row in history),
            key=lambda entry: entry["version"],
        ),
    }
ledger = spark.sql(
    f"select model_name, first_batch_id, last_batch_id, refresh_mode, recomputed_partitions "
    f"from {schema}.kappa_consumed_batches"
).collect()
report["_ledger"] = [row.asDict() for row in ledger]
first = spark.sql(
    f"select count(*) as n from {schema}.stg_web__event_deliveries version as of 0"
).collect()[0]["n"]
report["_version_0_rows"] = first
report["_rows_by_batch"] = {
    str(row["_ingestion_batch_id"]): row["n"]
    for row in spark.sql(
        f"select _ingestion_batch_id, count(*) as n from {schema}.stg_web__event_deliveries "
        "group by _ingestion_batch_id"
    ).collect()
}
print("PROBE " + json.dumps(report, default=str))
"""


# Each model's table format and its Delta history, in a schema of the project copy.
FORMAT_PROBE = """
import json, sys
from pathlib import Path
from kappa_shop.spark import session_for
spark = session_for(Path.cwd(), "local_delta")
schema = sys.argv[1]
report = {}
for model in json.loads(sys.argv[2]):
    detail = spark.sql(f"describe detail {schema}.{model}").collect()[0]
    history = spark.sql(f"describe history {schema}.{model}").collect()
    operations = [row["operation"] for row in history]
    report[model] = {"format": detail["format"], "operations": operations}
print("PROBE " + json.dumps(report))
"""
# Incremental dbt runs of one model in the last seed's incremental schema, on Delta: as it is,
# then with its file edited (argv: path, old, new; put back afterwards). After each run: each
# model's status and message, the table's columns and how many versions it has.
RUN_PROBE = """
import json, sys
from pathlib import Path
from pyspark.sql import SparkSession
from kappa_shop.dbt import DbtProject
model, schema, raw_schema, path, old, new = sys.argv[1:7]
project = DbtProject(Path.cwd(), target="local_delta", profiles_dir=Path.cwd())
def run():
    result = project.invoke(
        "run", "--select", model, "--vars", json.dumps({"raw_schema": raw_schema}), "--quiet",
        tolerate_failures=True,
    )
    spark = SparkSession.builder.getOrCreate()
    return {
        "statuses": {i.node.name: [str(i.status), i.message or ""] for i in result.results},
        "columns": spark.table(f"{schema}.{model}").columns,
        "versions": spark.sql(f"describe history {schema}.{model}").count(),
    }
report = {"as it is": run()}
original = Path(path).read_text()
try:
    Path(path).write_text(original.replace(old, new))
    report["edited"] = run()
finally:
    Path(path).write_text(original)
print("PROBE " + json.dumps(report))
"""
SUMMARY_LINE = re.compile(r"^  (\w+)\s+([\d,]+) rows  \S+ \((\w+)\)$")


def _models_built(stdout: str) -> dict[str, int]:
    """The rows of each model in `kappa-shop build`'s closing summary."""
    return {
        match[1]: int(match[2].replace(",", ""))
        for match in map(SUMMARY_LINE.match, stdout.splitlines())
        if match
    }


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


def _skip_without_delta_jars() -> None:
    """Skip, with the reason, on a machine that can neither fetch Delta's jars nor find them
    in Ivy's cache."""
    reason = jars_unavailable(delta_version(_delta_settings()) or "")
    if reason is not None:
        pytest.skip(f"Delta Lake cannot run on this machine: {reason}")


@pytest.fixture(scope="module")
def delta_proof(tmp_path_factory):
    """`kappa-shop check` and the proof for SEEDS on the Delta target, in a copy of its own,
    then what HISTORY_PROBE reads from the last seed's incremental schema."""
    _skip_without_delta_jars()
    root = copy_project(tmp_path_factory.mktemp("delta") / "kappa_shop")
    check = kappa_shop_in(root, "check", "--target", TARGET, timeout=600)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    proof = kappa_shop_in(
        root, "verify", "--target", TARGET, "--seeds", ",".join(map(str, SEEDS)),
        "--events", "500", "--rounds", "3", "--data-tests", "full-refresh", timeout=3000,
    )  # fmt: skip
    models = [
        "stg_web__event_deliveries",  # batches
        "sessions",  # days
        "orders_current",  # keys
        "users_history",  # keys, several rows per key
        "shop_metrics_per_minute",  # days
    ]
    probe = run_in(
        root,
        [sys.executable, "-c", HISTORY_PROBE, f"verify_{SEEDS[-1]}_incremental",
         json.dumps(models)],
        timeout=600,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stdout[-3000:] + probe.stderr[-3000:]
    line = next(line for line in probe.stdout.splitlines() if line.startswith("PROBE "))
    return check, proof, json.loads(line.removeprefix("PROBE ")), root


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
    check, _, _, _ = delta_proof
    assert f"ok: target '{TARGET}': Delta Lake {metadata.version('delta-spark')}" in check.stdout


def test_the_proof_passes_on_delta(delta_proof):
    _, proof, _, _ = delta_proof
    print(proof.stdout[-6000:])
    assert proof.returncode == 0, proof.stdout[-4000:] + proof.stderr[-4000:]
    for seed in SEEDS:
        assert f"Proof PASSED (seed {seed}): 35 of 35 models equal their full refresh" in (
            proof.stdout
        )
    assert "DIFFERENT" not in proof.stdout
    # every data test ran on the Delta tables of the full refresh (and the diff found the
    # incremental tables equal to them)
    tested = re.search(
        r"^Data tests run per build: .*replay of the last runs (\d+), full refresh (\d+)$",
        proof.stdout,
        re.M,
    )
    assert tested and int(tested[1]) == 0 and int(tested[2]) >= 200, proof.stdout[-3000:]


def test_every_model_is_a_delta_table_and_each_run_one_commit(delta_proof):
    _, _, report, _ = delta_proof
    ledger = report["_ledger"]
    rebuild, write = "CREATE OR REPLACE TABLE AS SELECT", "WRITE"
    for model in ("stg_web__event_deliveries", "sessions", "orders_current", "users_history"):
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
        if model == "stg_web__event_deliveries":
            # batches mode: every run with new batches replaces exactly those batches
            assert len(writes) >= len(incremental_runs) > 0, (model, operations)
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


def test_time_travel_reads_a_table_as_an_earlier_run_left_it(delta_proof):
    # version 0 of a batches model is its first build: exactly the rows of the batches that
    # build consumed (rows of a batch never change afterwards)
    _, _, report, _ = delta_proof
    first_build = next(
        row
        for row in report["_ledger"]
        if row["model_name"] == "stg_web__event_deliveries"
        and row["refresh_mode"] == "full_refresh"
    )
    # (the full_refresh row is the first build: the proof never rebuilds the incremental schema)
    consumed_first = range(first_build["first_batch_id"], first_build["last_batch_id"] + 1)
    expected = sum(report["_rows_by_batch"].get(str(batch), 0) for batch in consumed_first)
    assert expected > 0
    assert report["_version_0_rows"] == expected
    assert sum(report["_rows_by_batch"].values()) > expected  # later runs added batches


def test_a_changed_column_stops_an_incremental_run_on_delta_too(delta_proof):
    # on Delta a batches model's `replace where` selected the table's columns, so a column added
    # to the model was left out without a word; now the run stops and writes no version
    *_, root = delta_proof
    schema = f"verify_{SEEDS[-1]}_incremental"
    probe = run_in(
        root,
        [sys.executable, "-c", RUN_PROBE, "stg_web__events", schema, f"verify_{SEEDS[-1]}_raw",
         "models/staging/web/stg_web__events.sql", "select * from final",
         "select *, true as is_reviewed from final"],
        timeout=600, KAPPA_SHOP_SCHEMA=schema,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stdout[-3000:] + probe.stderr[-3000:]
    line = next(line for line in probe.stdout.splitlines() if line.startswith("PROBE "))
    report = json.loads(line.removeprefix("PROBE "))
    before, after = report["as it is"], report["edited"]
    # as it is: the check passes (nothing new to write)
    assert before["statuses"]["stg_web__events"][0] == "success", before
    status, message = after["statuses"]["stg_web__events"]
    assert status == "error"
    assert "new in the model: is_reviewed (boolean)" in message, message
    assert "dbt build --full-refresh --select stg_web__events+" in message, message
    assert "is_reviewed" not in after["columns"]
    assert after["versions"] == before["versions"]


@pytest.fixture(scope="module")
def format_switch(tmp_path_factory):
    """One schema built from the seed log on parquet, then on Delta (every data and unit test
    and the docs too), then on parquet again, in a copy of its own (the parquet builds' tests
    left out: test_sample_pipeline runs them on parquet, and here the rows are what is
    compared): each build's output, the formats after the second, and the tests `dbt ls`
    names."""
    _skip_without_delta_jars()
    root = copy_project(tmp_path_factory.mktemp("delta_switch") / "kappa_shop")
    listed = run_in(
        root,
        [str(Path(sys.executable).parent / "dbt"), "ls", "--quiet", "--target", TARGET,
         "--resource-type", "test", "--resource-type", "unit_test", "--output", "name"],
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    tests = listed.stdout.split()
    builds = {}
    for label, arguments in (
        ("parquet", ["--no-docs", "--no-tests"]),
        ("delta", ["--target", TARGET]),
        ("parquet again", ["--no-docs", "--no-tests"]),
    ):
        build = kappa_shop_in(root, "build", "--log", "seeds", *arguments, timeout=1200)
        assert build.returncode == 0, (label, build.stdout[-4000:] + build.stderr[-3000:])
        builds[label] = build
        if label == "delta":
            models = sorted(_models_built(build.stdout))
            probe = run_in(
                root, [sys.executable, "-c", FORMAT_PROBE, "kappa_shop", json.dumps(models)]
            )
            assert probe.returncode == 0, probe.stdout[-3000:] + probe.stderr[-3000:]
            line = next(line for line in probe.stdout.splitlines() if line.startswith("PROBE "))
            formats = json.loads(line.removeprefix("PROBE "))
    return root, builds, formats, tests


def test_switching_the_format_rebuilds_each_model_once_and_loses_nothing(format_switch):
    root, builds, formats, tests = format_switch
    parquet = _models_built(builds["parquet"].stdout)
    assert len(parquet) == 35 and sum(parquet.values()) > 0
    # on Delta: every model rebuilt once as a Delta table (a parquet table cannot be written in
    # place), with the same rows, every data and unit test passing, and the docs' catalog
    assert _models_built(builds["delta"].stdout) == parquet
    assert {model: entry["format"] for model, entry in formats.items()} == dict.fromkeys(
        parquet, "delta"
    )
    # (one version: the switch's rebuild, nothing written before or after it in that build)
    assert all(
        entry["operations"] == ["CREATE OR REPLACE TABLE AS SELECT"] for entry in formats.values()
    ), formats
    # (every data and unit test the project has, as `dbt ls` names them, passed on Delta)
    passed = re.search(r"^Tables built \(35\), (\d+) tests passed:$", builds["delta"].stdout, re.M)
    assert passed and int(passed[1]) == len(tests) >= 300, (passed, len(tests))
    catalog = json.loads((root / "target" / "catalog.json").read_text())
    assert "model.kappa_shop.sessions" in catalog["nodes"]
    # and back to parquet: the same rows again
    assert _models_built(builds["parquet again"].stdout) == parquet
    for label in ("parquet", "parquet again"):
        assert "Tables built (35), tests not run (--no-tests):" in builds[label].stdout
