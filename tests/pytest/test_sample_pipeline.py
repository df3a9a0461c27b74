"""The main job (`make run`): the generated sample log delivered and ingested batch by batch,
then dbt build, on a real Spark session, checked against an independent reading of the log.
And the same DAG built from the canonical seeds alone."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import timedelta
from itertools import pairwise

import pytest
import yaml
from log_oracle import activity_sessions, classify, landed_lines, seed_lines

from kappa_shop.errors import KappaShopError
from kappa_shop.log.format import TOPICS
from kappa_shop.serving.pipeline import build

GAP = timedelta(minutes=30)
SESSION_COLUMNS = """
    user_id,
    date_format(session_started_at, 'yyyy-MM-dd HH:mm:ss.SSS') as started,
    date_format(session_ended_at, 'yyyy-MM-dd HH:mm:ss.SSS') as ended,
    event_count, page_view_count, landing_page_path, exit_page_path, is_bounce, duration_seconds
"""


# where `make run` builds the models: version 1 of kappa_shop, whose views readers query
VERSION = "kappa_shop__v1"


def _sessions(spark, schema: str) -> list[tuple]:
    rows = spark.sql(f"select {SESSION_COLUMNS} from {schema}.sessions").collect()
    return sorted(tuple(row) for row in rows)


@pytest.fixture(scope="module")
def sample_log(built_project):
    """The generated sample log the build used, with its manifest."""
    log_dir = built_project.root / "data" / "sample-log"
    return log_dir, json.loads((log_dir / "manifest.json").read_text())


def test_summary_reports_every_raw_table_and_model(built_project, sample_log):
    _, manifest = sample_log
    raw = {table.name: table.rows for table in built_project.summary.raw_tables}
    built = {table.name: table.rows for table in built_project.summary.tables}

    for topic in TOPICS:
        assert raw[topic.raw_table] == manifest["by_topic"][topic.name]["records"]
    assert raw["raw_ingestion_batches"] == len(manifest["batches"])
    streams = yaml.safe_load((built_project.root / "dbt_project.yml").read_text())["vars"][
        "log_streams"
    ]
    expected_models = {"ingestion_lateness", "stg_log__quarantined_records"}
    expected_models |= {"stg_log__delivery_outcomes", "int_user_activity_sessionized"}
    expected_models |= {"sessions", "page_views", "active_users_per_5_minutes"}
    expected_models |= {"user_activity_rolling_hour", "user_orders_rolling_24_hours"}
    expected_models |= {f"shop_metrics_per_{size}" for size in ("minute", "hour", "day")}
    expected_models |= {"orders_daily", "suspected_card_testing", "cart_additions"}
    expected_models |= {"int_search_clicks_matched", "search_click_through", "search_ctr_daily"}
    expected_models |= {"users_history", "users_current", "orders_enriched", "orders_current"}
    expected_models |= {"inventory_levels"}
    for stream in streams.values():
        expected_models |= {stream["deliveries_model"], stream["staged_model"]}
    assert set(built) == expected_models
    # every data test of the project ran and passed; no unit test (CI's: the next test)
    data_tests = built_project.dbt.invoke(
        "ls", "--quiet", "--resource-type", "test", "--output", "name"
    )
    assert built_project.summary.tests_passed == len(list(data_tests)) > 100
    assert not built_project.summary.unit_tests
    assert (built_project.root / "target" / "index.html").is_file()
    catalog = json.loads((built_project.root / "target" / "catalog.json").read_text())
    assert "model.kappa_shop.sessions" in catalog["nodes"]
    assert "source.kappa_shop.web.events" in catalog["sources"]


def test_every_unit_test_passes(built_project):
    # left out of a build, as dbt recommends for production builds (their inputs are
    # fixtures); `make test` runs them all here, on the built project's session
    listed = list(
        built_project.dbt.invoke(
            "ls", "--quiet", "--resource-type", "unit_test", "--output", "name"
        )
    )
    result = built_project.dbt.invoke("test", "--select", "test_type:unit")

    # (the results hold the project's hooks too: the package's on-run-start and on-run-end)
    ran = [item for item in result.results if item.node.resource_type == "unit_test"]
    statuses = Counter(str(item.status) for item in ran)
    assert statuses == {"pass": len(listed)} and len(listed) >= 20, statuses
    assert {item.node.resource_type for item in result.results} == {"unit_test", "operation"}


def test_staging_keeps_exactly_the_first_valid_delivery(built_project, spark, sample_log):
    log_dir, _ = sample_log
    expected = {
        (record["event_id"], record["payload"]["user_id"], record["payload"]["page_path"])
        for record in classify(landed_lines(log_dir)).valid_records
        if record["event_type"] == "page_view"
    }
    staged = spark.sql(
        "select web_event_id, user_id, page_path from kappa_shop.stg_web__events "
        "where event_type = 'page_view'"
    ).collect()

    assert len(staged) == len(expected)
    assert {tuple(row) for row in staged} == expected


def test_sessions_equal_an_independent_sessionization(built_project, spark, sample_log):
    log_dir, _ = sample_log
    expected = sorted(activity_sessions(classify(landed_lines(log_dir)), GAP))

    assert _sessions(spark, "kappa_shop") == expected
    assert len(expected) > 100


def test_sources_are_fresh_after_ingesting_the_sample_log(built_project):
    # every source declares freshness on its ingestion time; a log ingested just now passes
    result = built_project.dbt.invoke("source", "freshness")

    freshness = [item for item in result.results if item.node.resource_type == "source"]
    statuses = {item.node.unique_id: str(item.status) for item in freshness}
    streams = yaml.safe_load((built_project.root / "dbt_project.yml").read_text())["vars"][
        "log_streams"
    ]
    sources = {f"source.kappa_shop.{stream['source']}" for stream in streams.values()}
    assert set(statuses) == sources | {"source.kappa_shop.ingestion.batches"}
    assert set(statuses.values()) == {"pass"}, statuses
    for item in freshness:
        assert item.age < 6 * 3600, (item.node.unique_id, item.age)


def test_running_the_job_again_changes_nothing(built_project, spark):
    before = sorted(tuple(row) for row in spark.table("kappa_shop.sessions").collect())
    raw_before = spark.table("kappa_shop_raw.raw_web_events").count()

    # (its data tests left out: the built project's build ran them on these same tables)
    summary = build(built_project.dbt, docs=False, tests=False)

    after = sorted(tuple(row) for row in spark.table("kappa_shop.sessions").collect())
    assert after == before
    assert spark.table("kappa_shop_raw.raw_web_events").count() == raw_before
    assert [table.rows for table in summary.raw_tables] == [
        table.rows for table in built_project.summary.raw_tables
    ]


def test_seeds_never_replace_an_ingested_log(built_project, spark):
    with pytest.raises(KappaShopError, match="holds an ingested log"):
        build(built_project.dbt, docs=False, log_source="seeds")
    assert spark.table("kappa_shop_raw.raw_web_events").count() == next(
        table.rows for table in built_project.summary.raw_tables if table.name == "raw_web_events"
    )


def test_the_whole_dag_builds_from_the_seeds_alone(built_project, spark):
    project = built_project.dbt
    seeded = project.elsewhere("kappa_shop_seeded", "kappa_shop_seeded_raw")
    summary = build(seeded, docs=False, log_source="seeds")

    lines = seed_lines(built_project.root)
    raw = {table.name: table.rows for table in summary.raw_tables}
    per_topic = Counter(line.topic for line in lines)
    for topic in TOPICS:
        assert raw[topic.raw_table] == per_topic[topic.name]
    expected = sorted(activity_sessions(classify(lines), GAP))
    sessions = _sessions(spark, "kappa_shop_seeded")
    assert sessions == expected

    by_user = Counter(session[0] for session in sessions)
    assert by_user["u-002"] == 1  # views exactly 30 minutes apart: one session
    assert by_user["u-003"] == 2  # 30 minutes and a second: two
    assert by_user["u-005"] == 2  # activity across midnight: cut there
    assert by_user["u-007"] == 1  # the late view merges two sessions into one
    assert by_user["u-001"] == 2


def test_the_seed_log_keeps_its_hard_cases(built_project):
    classified = classify(seed_lines(built_project.root))
    kinds = Counter()
    for counts in classified.counts.values():
        kinds.update(counts)
    for kind in (
        "duplicate",
        "conflicting_duplicate",
        "not_json",
        "missing_required_field",
        "wrong_type",
        "null_key",
        "unknown_event_type",
        "event_time_in_future",
        "event_time_before_epoch",
        "oversize_record",
    ):
        assert kinds[kind] > 0, kind
    assert sum(classified.drift.values()) > 0
    times = sorted(
        (record["payload"]["user_id"], record["event_time"])
        for record in classified.valid_records
        if record["event_type"] == "page_view"
    )
    same_user_gaps = {
        (later[1], earlier[1]) for earlier, later in pairwise(times) if earlier[0] == later[0]
    }
    assert ("2024-03-01T10:30:00.000Z", "2024-03-01T10:00:00.000Z") in same_user_gaps


def test_gap_test_fails_on_sessions_closer_than_the_gap(built_project):
    # Sessions built with a 30-minute gap, checked against a 3-hour gap: the invariant test
    # must report the pairs closer than that.
    built_project.dbt.invoke("test", "--select", "assert_consecutive_sessions_more_than_gap_apart")
    with pytest.raises(KappaShopError, match="finished with failures"):
        built_project.dbt.invoke(
            "test",
            "--select",
            "assert_consecutive_sessions_more_than_gap_apart",
            dbt_vars={"session_inactivity_gap_minutes": 180},
        )


def test_the_not_null_test_names_each_column_holding_nulls_and_how_many(built_project, spark):
    # the project's one not-null test per model (macros/tests/test_not_null_columns.sql), on a
    # table whose second and third columns hold nulls: a row per such column, with its count
    spark.sql("create schema not_null_check")
    try:
        spark.sql(
            "create table not_null_check.t using parquet as select * from values "
            "(1, 'a', null), (2, null, null), (3, 'c', 7) as t(id, name, `value`)"
        )
        rows = built_project.dbt.query(
            "{{ test_not_null_columns('not_null_check.t', ['id', 'name', 'value']) }}"
        )
    finally:
        spark.sql("drop schema not_null_check cascade")
    assert sorted((row["column_name"], row["null_rows"]) for row in rows) == [
        ("name", 1),
        ("value", 2),
    ]


def test_files_left_by_a_kill_inside_a_table_swap_are_cleared(built_project, spark, tmp_path):
    # A full refresh builds `sessions__kappa_build_<run>`, drops `sessions`, renames the build
    # into place. The metastore's DROP commits before it deletes the table's files, so a kill
    # inside it leaves the build table and files at `sessions`' location without a table
    # (a kill inside the rename, which moves the directory before it commits, leaves the same).
    # That state, made here exactly: the next run must clear the files and rebuild sessions.
    # (the served version's table, which readers read through the view kappa_shop.sessions)
    before = _sessions(spark, VERSION)
    location = built_project.root / "spark-warehouse" / f"{VERSION}.db" / "sessions"
    spark.sql(
        f"create table {VERSION}.sessions__kappa_build_killed000000 as "
        f"select * from {VERSION}.sessions"
    )
    shutil.copytree(location, tmp_path / "sessions")
    spark.sql(f"drop table {VERSION}.sessions")
    shutil.copytree(tmp_path / "sessions", location)
    assert any(location.rglob("*.parquet"))

    project = built_project.dbt  # (its served version, version 1: VERSION)
    project.to(project.destination.at_version(1)).invoke("run", "--select", "sessions")

    assert _sessions(spark, VERSION) == before
    assert _sessions(spark, "kappa_shop") == before
    tables = spark.sql(f"show tables in {VERSION}").collect()
    # (the `__kappa_new` temporary views of this process's dbt runs are not tables)
    assert [
        row.tableName for row in tables if "__kappa_" in row.tableName and not row.isTemporary
    ] == []
    # nothing of the swap or of the clearing is left on disk either
    assert sorted(path.name for path in location.parent.glob("sessions_*")) == []
    log = (built_project.root / "logs" / "dbt.log").read_text()
    assert f"Cleared file:{location}: files without a table" in log
