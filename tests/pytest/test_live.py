"""The live service (kappa_shop.serving.live, `kappa-shop live`, docs/live.md) in this process,
on the suite's Spark, on parquet (`local`): the sample log delivered into a landing zone in
parts, a cycle after each part (the service's own loop, `cycles=1` at a time, as a restart
would run it); the cycles recorded, each record's completion latency timed from its file's
arrival, the data tests run every second cycle that built; a stop asked for during a cycle
ends the loop after it, at a safe point; a failure that repeats is said and recorded once; a
second service on the same log is refused; the log's lag before ingestion is the files landed
that no batch took; `kappa-shop status` reads it all back; and at the end every model the
service keeps equals a full refresh of the same raw tables. (A SIGKILL of
the service and a broker that goes away: not yet tested, docs/live.md.)"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kappa_shop.bench.checks import model_grains
from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import BATCH_LOG_TABLE, ensure_raw_tables
from kappa_shop.log.format import TOPICS
from kappa_shop.log.landing import batch_numbers, deliver
from kappa_shop.proof.diff import diff_models
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.warehouse import SessionWarehouse, table_names, warehouse_dir
from kappa_shop.serving import compaction, live
from kappa_shop.serving.pipeline import prepare_sample_log
from kappa_shop.serving.versions import open_serving, version_schema

SCHEMA = "live_service"
# the models the service keeps here: one of each mode (orders by day, current orders, and the
# staging they read)
SELECT = ("+orders_daily", "+orders_current")


def _rows(warehouse: Any, relation: str) -> list[str]:
    return sorted(
        json.dumps(dict(row), sort_keys=True, default=str)
        for row in warehouse.sql(f"select * from {relation}")
    )


def _files(warehouse: Any, schema: str) -> list[int]:
    return [compaction.data_files(warehouse, schema, table) for table in live.OWN_TABLES]


def _landed(landing: Path) -> set[Path]:
    return {path for path in (landing / "topics").rglob("*.jsonl") if path.name[0] not in "._"}


@pytest.fixture(scope="module")
def service(spark: Any, project_copy: Path, tmp_path_factory: pytest.TempPathFactory):
    patch = pytest.MonkeyPatch()
    patch.setenv("KAPPA_SHOP_SCHEMA", SCHEMA)
    project = DbtProject(root=project_copy, target="local", profiles_dir=project_copy)
    warehouse = project.warehouse()
    for row in warehouse.sql(f"show schemas like '{SCHEMA}*'"):
        warehouse.sql(f"drop schema {row['namespace']} cascade")
    log_dir = prepare_sample_log(project)
    landing = tmp_path_factory.mktemp("live-landing")
    batches = batch_numbers(log_dir)
    assert len(batches) >= 5
    said: list[str] = []
    seen: dict[str, Any] = {"said": said}

    def cycle(numbers: list[int], **options: Any) -> list[live.Cycle]:
        if numbers:
            deliver(log_dir, landing, numbers)
        return live.run_live(
            project, landing, every=0, tests_every=2, select=SELECT, say=said.append, **options
        )

    seen["first"] = cycle(batches[:2], cycles=1)
    seen["second"] = cycle(batches[2:3], cycles=1)  # the second that builds: tests run
    seen["idle"] = cycle([], cycles=1)
    # a stop asked for (SIGTERM's way) while a cycle runs: the loop ends after that cycle
    stop = live.StopRequest()

    def stopping(line: str) -> None:
        said.append(line)
        if line.startswith("live: cycle"):
            stop.event.set()

    before = _landed(landing)
    deliver(log_dir, landing, batches[3:])
    # the log's lag before ingestion: the files just landed, none of them ingested yet
    seen["waiting"] = (live.log_lag(project, landing), sorted(_landed(landing) - before))
    seen["stopped"] = live.run_live(
        project, landing, every=0, tests_every=2, select=SELECT, say=stopping, stop=stop
    )
    # a second service on the same log while one holds its lock
    with live._service_lock(project, "the test"), pytest.raises(KappaShopError) as refused:
        live.run_live(project, landing, cycles=1, select=SELECT, say=said.append)
    seen["refused"] = str(refused.value)
    seen["status"] = live.status(project)
    seen["cycles"] = live.recorded_cycles(warehouse, project.raw_schema)
    seen["raw records"] = sum(
        int(
            warehouse.sql(f"select count(*) as n from {project.raw_schema}.{topic.raw_table}")[0][
                "n"
            ]
        )
        for topic in TOPICS
    )
    seen["landing"] = landing
    # the service's own tables compacted (at the start of a service, when one holds more data
    # files than the limit): every row kept
    own = [f"{project.raw_schema}.{table}" for table in live.OWN_TABLES]
    before = [_rows(warehouse, table) for table in own], _files(warehouse, project.raw_schema)
    compacting: list[str] = []
    live.run_live(
        project, landing, every=0, cycles=1, select=SELECT, say=compacting.append, compact_after=2
    )
    after = [_rows(warehouse, table) for table in own], _files(warehouse, project.raw_schema)
    seen["compaction"] = (before, after, compacting)
    # the full refresh of the same raw tables, beside
    full = project.elsewhere(f"{SCHEMA}_full", project.raw_schema)
    result = full.invoke("run", "--full-refresh", "--quiet", "--select", *SELECT)
    grains = model_grains(result)
    served = open_serving(warehouse, SCHEMA).served
    assert served is not None
    seen["diffs"] = diff_models(warehouse, grains, version_schema(SCHEMA, served), f"{SCHEMA}_full")
    yield seen
    patch.undo()


def test_every_model_the_service_keeps_equals_a_full_refresh(service):
    diffs = service["diffs"]
    assert [diff.model for diff in diffs] == [
        "orders_current",
        "orders_daily",
        "stg_orders__order_event_deliveries",
        "stg_orders__order_events",
    ]
    assert [diff.model for diff in diffs if not diff.equal] == []
    assert all(diff.full_rows > 0 for diff in diffs)


def test_each_cycle_that_built_is_recorded_with_its_batches_records_and_latency(service):
    cycles = service["cycles"]
    assert [cycle.number for cycle in cycles] == [1, 2, 3]
    # the batches they made visible tile 1..N, every record of the raw tables counted once
    assert cycles[0].first_batch_id == 1
    for before, after in itertools.pairwise(cycles):
        assert after.first_batch_id == before.last_batch_id + 1
    assert sum(cycle.records for cycle in cycles) == service["raw records"]
    assert [(cycle.error, cycle.untimed) for cycle in cycles] == [(None, 0)] * 3
    # nothing landed while a cycle ran: at each one's end, the log's lag was none
    assert [cycle.lag_records for cycle in cycles] == [0, 0, 0]
    for cycle in cycles:
        latency = cycle.latency
        assert 0 <= latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"]
        # no later than the cycle's end, no sooner than its start, after the files arrived
        assert latency["max"] >= (cycle.ended_at - cycle.started_at).total_seconds() - 0.1
        assert {"orders_daily", "orders_current"} <= set(cycle.model_seconds)
        assert cycle.build_seconds > 0
    # the data tests ran in the second cycle that built, and only there
    assert [cycle.tests_seconds is not None for cycle in cycles] == [False, True, False]
    lines = [line for line in service["said"] if line.startswith("live: cycle")]
    assert lines == [cycle.line() for cycle in cycles]
    assert lines[1].startswith("live: cycle 2 (") and ", tests " in lines[1]


def test_the_lag_before_ingestion_is_the_landed_files_no_batch_took(service):
    lag, files = service["waiting"]
    assert len(files) > 0 and lag.files == len(files)
    assert lag.records == sum(len(path.read_bytes().splitlines()) for path in files)
    assert lag.oldest == min(path.stat().st_mtime for path in files)
    said = lag.describe(lag.oldest + 2.0)
    assert said == f"{lag.records:,} records in {len(files):,} file(s), the oldest landed 2.0 s ago"
    # the cycle after took them all: that cycle's records are theirs
    (stopped,) = service["stopped"]
    assert stopped.records == lag.records and stopped.lag_records == 0


def test_a_cycle_with_nothing_new_is_neither_recorded_nor_said_but_once(service):
    (idle,) = service["idle"]
    assert idle.batches == 0 and idle.error is None
    through = service["cycles"][1].last_batch_id
    waiting = f"live: up to date through ingestion batch {through}; waiting for new records"
    assert service["said"].count(waiting) == 1, service["said"]
    assert len(service["cycles"]) == 3  # (the idle cycle not among them)


def test_a_stop_ends_the_loop_after_its_cycle_at_a_safe_point(service):
    (stopped,) = service["stopped"]
    assert stopped.number == 3 and stopped.batches > 0
    # its last two lines: the cycle's, then the stop's (the refused service said nothing)
    assert service["said"][-2:] == [
        stopped.line(),
        "live: stopped (asked) after cycle 3, at a safe point",
    ]


def test_a_second_service_on_the_same_log_is_refused(service):
    assert service["refused"].startswith(f"a live service already runs on {SCHEMA}_raw ("), service[
        "refused"
    ]
    assert f'"pid": {os.getpid()}' in service["refused"]
    assert "the test" in service["refused"]


def test_status_reads_the_cycles_back(service):
    lines = service["status"].splitlines()
    assert lines[0] == f"live on {SCHEMA}_raw: not running"
    cycles = service["cycles"]
    assert lines[1:4] == [cycle.line() for cycle in cycles]
    assert lines[4].startswith(
        f"completion latency, last hour ({service['raw records']:,} records): p50 "
    )
    last = cycles[-1].last_batch_id
    assert lines[5] == f"ingested through batch {last}; models built through batch {last}"
    assert lines[6:] == ["not yet ingested: none"]


def test_the_service_s_own_tables_are_compacted_with_every_row_kept(service):
    (rows_before, files_before), (rows_after, files_after), said = service["compaction"]
    assert rows_after == rows_before and all(rows_before)
    assert all(files > 2 for files in files_before) and files_after == [1, 1], files_before
    assert said[1:3] == [
        f"live: {SCHEMA}_raw.{table} compacted: {files} data files into 1"
        for table, files in zip(live.OWN_TABLES, files_before, strict=True)
    ], said


def test_a_compaction_killed_at_any_step_is_finished_or_undone_by_the_next_start(spark):
    # the states a kill leaves at each step of a compaction (kappa_shop.serving.compaction),
    # made by hand in a schema of its own, then what the next start's repair makes of them:
    # the table's rows, all of them once
    warehouse = SessionWarehouse(spark)
    schema, table = "live_compaction", live.CYCLES_TABLE
    relation, copy = f"{schema}.{table}", f"{schema}.{table}{compaction.COMPACTED}"
    spark.sql(f"drop schema if exists {schema} cascade")
    spark.sql(f"create schema {schema}")
    try:
        spark.sql(f"create table {relation} (cycle bigint) using parquet")
        for cycle in (1, 2, 3):
            spark.sql(f"insert into {relation} values ({cycle})")
        rows = _rows(warehouse, relation)
        assert len(rows) == 3 and compaction.data_files(warehouse, schema, table) == 3

        def repaired() -> list[str]:
            return compaction.repair(warehouse, schema, [table])

        # killed while the copy was written: its files, no table for them yet
        base = warehouse_dir(warehouse) / f"{schema}.db"
        shutil.copytree(base / table, base / f"{table}{compaction.COMPACTED}")
        assert repaired() == [f"{table}: the files of an unfinished compacted copy deleted"]
        assert not (base / f"{table}{compaction.COMPACTED}").exists()
        # killed after the copy, before the drop: both whole
        spark.sql(f"create table {copy} using parquet as select * from {relation}")
        assert repaired() == [f"{table}: an unfinished compacted copy dropped"]
        assert table_names(warehouse, schema) == {table}
        assert _rows(warehouse, relation) == rows
        # killed between the drop and the rename: the copy, whole, goes into place
        spark.sql(
            f"create table {copy} using parquet as select /*+ COALESCE(1) */ * from {relation}"
        )
        spark.sql(f"drop table {relation}")
        assert repaired() == [f"{table}: its compacted copy renamed into place"]
        assert table_names(warehouse, schema) == {table}
        assert _rows(warehouse, relation) == rows
        assert compaction.data_files(warehouse, schema, table) == 1
        assert repaired() == []  # nothing left to repair
    finally:
        spark.sql(f"drop schema if exists {schema} cascade")


def test_a_failure_that_repeats_is_said_and_recorded_once(
    spark: Any, project_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a landing zone that is not there: every cycle fails the same way, as while a broker is away
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", "live_failing")
    project = DbtProject(root=project_copy, target="local", profiles_dir=project_copy)
    warehouse = project.warehouse()
    warehouse.sql("drop schema if exists live_failing_raw cascade")
    said: list[str] = []
    ran = live.run_live(project, tmp_path / "nowhere", every=0, cycles=3, say=said.append)
    assert len(ran) == 3 and ran[0].error, ran
    assert [cycle.error for cycle in ran] == [ran[0].error] * 3
    assert str(tmp_path / "nowhere") in ran[0].error
    failed = [line for line in said if line.startswith("live: cycle")]
    assert failed == [ran[0].line()]
    assert failed[0].startswith("live: cycle 1 (") and f"failed: {ran[0].error}" in failed[0]
    recorded = live.recorded_cycles(warehouse, project.raw_schema)
    assert [(cycle.number, cycle.error) for cycle in recorded] == [(1, ran[0].error)]


def _without_raw_schema(
    project_copy: Path, monkeypatch: pytest.MonkeyPatch, schema: str
) -> tuple[DbtProject, Any, str]:
    """The project on `schema`, its raw schema dropped: (project, warehouse, raw schema)."""
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", schema)
    project = DbtProject(root=project_copy, target="local", profiles_dir=project_copy)
    warehouse = project.warehouse()
    warehouse.sql(f"drop schema if exists {project.raw_schema} cascade")
    return project, warehouse, project.raw_schema


def test_a_cycles_table_recorded_before_the_lag_gains_its_column_and_keeps_its_rows(
    spark: Any, project_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, warehouse, raw = _without_raw_schema(project_copy, monkeypatch, "live_upgrade")
    warehouse.sql(f"create schema {raw}")
    # the table as a service before the lag recorded it, with one cycle
    warehouse.sql(
        f"create table {raw}.{live.CYCLES_TABLE} (cycle bigint, started_at timestamp,"
        " ended_at timestamp, first_batch_id bigint, last_batch_id bigint, records bigint,"
        " ingest_seconds double, build_seconds double, tests_seconds double,"
        " model_seconds map<string, double>, latency map<string, double>, error string,"
        " untimed_records bigint) using parquet"
    )
    warehouse.sql(
        f"insert into {raw}.{live.CYCLES_TABLE} values (1, timestamp'2026-12-06 10:00:00',"
        " timestamp'2026-12-06 10:00:30', 1, 2, 40, 1.5, 20.0, null, map('sessions', 2.5),"
        " map('p50', 10.0), null, 0)"
    )
    live.ensure_tables(warehouse, raw)
    stamp = datetime(2026, 12, 6, 10, 1)
    live.record_cycle(
        warehouse, raw, live.Cycle(2, stamp, stamp, 3, 3, 5, 0.5, 9.0, None, lag_records=7), {}
    )
    cycles = live.recorded_cycles(warehouse, raw)
    assert [(cycle.number, cycle.records, cycle.lag_records) for cycle in cycles] == [
        (1, 40, None),
        (2, 5, 7),
    ]
    assert cycles[0].model_seconds == {"sessions": 2.5}
    assert cycles[1].line().endswith("; log lag 7 records")


def test_the_service_s_records_are_checked_for_a_cycle_or_batch_twice_or_never(
    spark: Any, project_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what kills could leave wrong in the service's own records, planted: cycle 2 recorded
    # twice (an append merged in again), ingestion batch 3 accounted for by cycles 2 and 3,
    # batch 5 by none, a cycle whose latencies hold fewer records than it timed, and batch 7
    # received but built by no cycle (the last cycle did not fail): each one line
    project, warehouse, raw = _without_raw_schema(project_copy, monkeypatch, "live_planted")
    ensure_raw_tables(warehouse, raw)
    live.ensure_tables(warehouse, raw)
    assert live.check_records(project) == []  # (nothing recorded yet: nothing wrong)
    stamp = datetime(2026, 12, 6, 10, 1)
    for number, first, last, histogram in (
        (1, 1, 2, {10: 4}),
        (2, 3, 4, {20: 6}),
        (2, 3, 4, {20: 6}),
        (3, 3, 3, {30: 1}),
        (4, 6, 6, {40: 2}),
    ):
        records = sum(histogram.values())
        cycle = live.Cycle(number, stamp, stamp, first, last, records, 0.5, 9.0, None)
        live.record_cycle(warehouse, raw, cycle, {} if number == 4 else histogram)
    warehouse.sql(
        f"insert into {raw}.{BATCH_LOG_TABLE} partition (ingestion_batch_id)"
        " select current_timestamp(), 1, 1, id from range(1, 8)"
    )
    assert live.check_records(project) == [
        "cycle 2 recorded 2 times",
        "ingestion batch 3 accounted for by cycles 2 and 3",
        "ingestion batch(es) 5..5 accounted for by no cycle",
        "ingestion batch(es) 7..7 built by no cycle",
        "cycle 2: 6 records timed, its latencies hold 12",
        "cycle 4: 2 records timed, its latencies hold 0",
    ]
