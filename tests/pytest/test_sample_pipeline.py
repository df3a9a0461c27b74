"""The sample pipeline (what `make run` does), built on a real Spark session and checked
against an independent reading of the sample log."""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

import pytest

from kappa_shop.errors import KappaShopError

from sample_log import first_deliveries, read_deliveries, sessionize

SESSION_COLUMNS = """
    user_id,
    date_format(session_started_at, 'yyyy-MM-dd HH:mm:ss') as started,
    date_format(session_ended_at, 'yyyy-MM-dd HH:mm:ss') as ended,
    page_view_count, landing_page_path, exit_page_path, is_bounce, duration_seconds
"""


def _sessions(spark) -> list[tuple]:
    rows = spark.sql(f"select {SESSION_COLUMNS} from kappa_shop.sessions").collect()
    return sorted(tuple(row) for row in rows)


def test_summary_reports_the_rows_of_every_table(built_project, spark):
    deliveries = read_deliveries(built_project.root)
    counted = {table.name: table.rows for table in built_project.summary.tables}
    raw = {table.name: table.rows for table in built_project.summary.raw_tables}

    assert raw == {"raw_web_page_views": len(deliveries)}
    assert counted["stg_web__page_views"] == len(first_deliveries(deliveries))
    assert counted["sessions"] == spark.table("kappa_shop.sessions").count()
    assert built_project.summary.tests_passed > 0
    assert (built_project.root / "target" / "index.html").is_file()
    assert (built_project.root / "target" / "catalog.json").is_file()


def test_staging_keeps_exactly_the_first_delivery_of_each_event(built_project, spark):
    expected = {
        (view.event_id, view.user_id, view.page_path, view.batch_id)
        for view in first_deliveries(read_deliveries(built_project.root)).values()
    }
    staged = spark.sql(
        "select page_view_id, user_id, page_path, _batch_id from kappa_shop.stg_web__page_views"
    ).collect()

    assert len(staged) == len(expected)
    assert {tuple(row) for row in staged} == expected


def test_sessions_equal_an_independent_sessionization(built_project, spark):
    views = list(first_deliveries(read_deliveries(built_project.root)).values())
    expected = sorted(sessionize(views, gap=timedelta(minutes=30)))

    assert _sessions(spark) == expected


def test_sample_log_exercises_the_gap_boundary(built_project):
    # The sample must keep its hard cases, or the oracle test above proves little.
    views = list(first_deliveries(read_deliveries(built_project.root)).values())
    by_user: dict[str, list] = {}
    for view in sorted(views, key=lambda view: view.occurred_at):
        by_user.setdefault(view.user_id, []).append(view.occurred_at)
    gaps = {later - earlier for times in by_user.values() for earlier, later in pairwise(times)}
    assert timedelta(minutes=30) in gaps
    assert timedelta(minutes=30, seconds=1) in gaps
    assert timedelta(0) in gaps
    assert len(read_deliveries(built_project.root)) > len(views)  # a redelivered event


def test_building_again_changes_nothing(built_project, spark):
    before = sorted(tuple(row) for row in spark.sql("select * from kappa_shop.sessions").collect())
    built_project.dbt.invoke("build")
    after = sorted(tuple(row) for row in spark.sql("select * from kappa_shop.sessions").collect())

    assert after == before


def test_overlap_test_fails_on_sessions_closer_than_the_gap(built_project):
    # Sessions built with a 30-minute gap are at most 2h20m apart for some user; checked
    # against a 3-hour gap, the invariant test must report them.
    built_project.dbt.invoke("test", "--select", "assert_sessions_never_overlap")
    with pytest.raises(KappaShopError, match="finished with failures"):
        built_project.dbt.invoke(
            "test",
            "--select",
            "assert_sessions_never_overlap",
            "--vars",
            "{session_inactivity_gap_minutes: 180}",
        )
