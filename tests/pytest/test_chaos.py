"""`kappa-shop chaos`: a short campaign (two runs) in a project copy of its own, and its parts
that need no Spark (where a kill landed, the exactly-once count, the refusals).

The campaign (seed 10, steps live and compaction) kills the live service (`kappa-shop live`,
one cycle) at a random moment of its cycle and a build inside its on-run-end hook (the batch
ledger's commit and compaction): steps no other test kills at a moment it did not choose. Each
kill must land inside a write (of the cycle's ingestion, build or record; the ledger's): the
staging directory it leaves in the warehouse says so. The service started again must take
what the killed one left, its records holding no cycle twice and no batch twice or never.
Ingestion killed inside a batch: test_ingest, test_kafka; builds killed at chosen points:
test_faults; a reprocess killed: test_reprocess_killed; the campaigns by hand:
docs/guarantees.md, Chaos."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_project, kappa_shop_in

from kappa_shop.log.format import TOPICS
from kappa_shop.ops.chaos_worker import compare_counts
from kappa_shop.ops.kills import (
    IN_THE_HOOK,
    WriteWatch,
    interrupted_tables,
    statements_in_flight,
    where_it_landed,
)

# Spark starts in the subprocesses (not through a fixture of conftest's SPARK_FIXTURES)
pytestmark = pytest.mark.spark

SCHEMA = "chaos"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("chaos")
    root = copy_project(work / "kappa_shop")
    work_dir = work / "campaign"
    started = time.monotonic()
    result = kappa_shop_in(
        root, "chaos", "--runs", "2", "--seed", "10", "--events", "2000", "--check-every", "2",
        "--steps", "live,compaction",
        "--work-dir", str(work_dir), timeout=1500,
    )  # fmt: skip
    # (shown with pytest -s: where the module's minutes go)
    print(result.stdout)
    print(f"kappa-shop chaos --runs 2: {time.monotonic() - started:.1f} s")
    return {
        "root": root,
        "work_dir": work_dir,
        "result": result,
        "report": json.loads((work_dir / "chaos.json").read_text()),
    }


def test_the_campaign_finds_nothing_lost_doubled_or_different(campaign):
    result, report = campaign["result"], campaign["report"]
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    runs = report["runs"]
    assert [run["step"] for run in runs] == ["live", "compaction"]
    for run in runs:
        assert run["problems"] == []
        assert run["raw"] == "exactly once"
        assert "build with tests passed" in run["recovery"]
    # the killed service started again: its cycle took the batch the killed one had taken (and
    # the service's records, checked, hold no cycle twice and no batch twice or never)
    assert re.match(r"the service again: a cycle took batches \d+\.\.\d+, ", runs[0]["recovery"])
    # after the last run, every serving name equals its rebuild from the log
    equal = re.fullmatch(r"(\d+) of (\d+) equal", runs[-1]["compared"])
    assert equal and equal[1] == equal[2] and int(equal[1]) > 30, runs[-1]["compared"]
    assert runs[0]["compared"] == "-"
    assert "Nothing lost, doubled or different." in result.stdout
    # the table: a row per run
    assert re.search(r"^\s+1  live ", result.stdout, re.MULTILINE)
    assert re.search(r"^\s+2  compaction ", result.stdout, re.MULTILINE)


def test_each_kill_landed_inside_a_write_of_its_step(campaign):
    runs = campaign["report"]["runs"]
    assert [run["killed"] for run in runs] == [True, True], [run["landed"] for run in runs]
    # the write each kill interrupted: its staging directory was still there after the kill
    cycle, ledger = runs[0]["interrupted"], runs[1]["interrupted"]
    # the service's kill, at its moment drawn: inside a write of its cycle (a raw table's or
    # the cycle's record, in the raw schema; a model's or the ledger's, in the version's); the
    # build runs two dbt threads, so a kill can interrupt two models' writes at once
    assert 1 <= len(cycle) <= 2, cycle
    assert all(table.startswith((f"{SCHEMA}_raw.", f"{SCHEMA}__v1.")) for table in cycle), cycle
    assert len(cycle) == 1 or all(table.startswith(f"{SCHEMA}__v1.") for table in cycle), cycle
    assert len(ledger) == 1 and ledger[0].endswith(".kappa_batch_ledger"), ledger
    assert f"inside a write of {', '.join(cycle)}" in campaign["result"].stdout
    assert "Kills inside a write (a staging directory left): 2 of 2" in campaign["result"].stdout
    # inside a write of the ledger after the build's last node: its on-run-end hook
    assert runs[1]["landed"] == IN_THE_HOOK, runs[1]["landed"]
    if cycle[0].startswith(f"{SCHEMA}_raw."):  # (Spark's own write, not dbt's)
        assert runs[0]["landed"] == "its cycle, outside dbt (ingesting or recording)", runs[0]
    else:  # a write of its build: dbt's statement in flight, read from its debug log
        assert runs[0]["landed"].startswith("its cycle's build: "), runs[0]["landed"]
        assert re.search(r"insert|merge|create table", runs[0]["statement"]), runs[0]
    # each killed command's output is kept beside the table
    logs = sorted(path.name for path in (campaign["work_dir"] / "runs").iterdir())
    assert logs == ["run-001-live.log", "run-002-compaction.log"]


def test_the_raw_tables_hold_every_landed_line_once_read_from_their_files(campaign, spark):
    # independent of the campaign's own check: the copy's raw parquet files against the
    # landing zone's lines
    root, landing = campaign["root"], campaign["work_dir"] / "landing"
    expected: Counter = Counter()
    for topic in TOPICS:
        for path in (landing / "topics" / topic.name).rglob("*.jsonl"):
            with path.open(encoding="utf-8", newline="\n") as handle:
                expected.update((topic.name, line[:-1]) for line in handle)
    raw_dir = root / "spark-warehouse" / f"{SCHEMA}_raw.db"
    found: Counter = Counter()
    for topic in TOPICS:
        frame = spark.read.parquet(str(raw_dir / topic.raw_table))
        found.update((topic.name, row["raw_record"]) for row in frame.collect())
    assert sum(expected.values()) > 1000
    assert found == expected


def test_a_loss_or_a_duplicate_is_reported():
    landed = Counter({("order_events", "a"): 1, ("order_events", "b"): 1})
    assert compare_counts(landed, Counter(landed)) == ("exactly once", [])
    lost = Counter({("order_events", "a"): 1})
    assert compare_counts(landed, lost) == (
        "1 lost, 0 doubled",
        ["1 landed record(s) missing from the raw tables"],
    )
    doubled = landed + Counter({("order_events", "b"): 2})
    assert compare_counts(landed, doubled) == (
        "0 lost, 2 doubled",
        ["2 record(s) in the raw tables too often"],
    )


DBT_LOG = """\
\x1b[0m01:11:41.256892 [debug] [Thread-1 (]: On model.kappa_shop.orders_daily: /* {"app": "dbt"} */
insert overwrite table chaos__v1.orders_daily partition (order_date)
\x1b[0m01:11:41.300000 [debug] [Thread-2 (]: On model.kappa_shop.users_current: /* {"app": "dbt"} */

  merge into chaos__v1.users_current as target
\x1b[0m01:11:42.215582 [debug] [Thread-2 (]: SQL status: OK in 0.9 seconds
"""


def test_the_statement_in_flight_is_read_from_dbts_debug_log():
    # thread 1's insert has no status after it; thread 2's merge has
    assert statements_in_flight(DBT_LOG) == [("orders_daily", "insert overwrite")]
    output = (
        "\x1b[0m01:21:20  1 of 41 START sql exact_incremental model chaos__v1.orders_daily  [RUN]\n"
        "\x1b[0m01:21:20  2 of 41 START sql exact_incremental model chaos__v1.users_current [RUN]\n"
    )
    assert where_it_landed("build", output, DBT_LOG) == (
        "users_current",
        "insert overwrite (orders_daily)",
    )
    hooks = "\x1b[0m01:21:17  3 of 3 OK hook: kappa_shop.on-run-start.2 ..... [OK in 2.38s]\n"
    assert where_it_landed("compaction", hooks + output + "41 of 41 NO-OP exposure x\n", "")[0] == (
        "the on-run-end hook (ledger commit and compaction)"
    )
    started = "\x1b[0m01:21:17  2 of 3 START hook: kappa_shop.on-run-start.1 ..... [RUN]\n"
    assert where_it_landed("build", started, "") == ("the on-run-start hook", "between statements")
    assert where_it_landed("ingest", "  ingestion batch 7: 4 files, 120 records into x\n", "")[
        0
    ] == ("after ingestion batch 7 (1 written)")


def test_a_write_in_flight_is_a_staging_directory_that_was_not_there_before(tmp_path: Path):
    table = tmp_path / "chaos_raw.db" / "raw_order_events"
    (table / "_ingestion_batch_id=1").mkdir(parents=True)
    (table / "_temporary" / "0").mkdir(parents=True)  # left by an earlier kill
    watch = WriteWatch(tmp_path)
    watch.start()
    assert watch.in_flight() == set()
    (tmp_path / "chaos__v1.db" / "orders_daily" / ".spark-staging-7f3a").mkdir(parents=True)
    (tmp_path / "chaos__v1.db" / "orders_daily" / "order_date=2024-01-01").mkdir()
    (tmp_path / "chaos__v1.db" / "sessions" / "_SUCCESS").mkdir(parents=True)  # (not staging)
    (tmp_path / "notes").mkdir()  # (not a schema)
    assert watch.in_flight() == {"chaos__v1.orders_daily/.spark-staging-7f3a"}
    assert interrupted_tables(watch.in_flight() | {"chaos__v1.orders_daily/_temporary"}) == [
        "chaos__v1.orders_daily"
    ]
    assert WriteWatch(tmp_path / "gone").in_flight() == set()


def test_chaos_refuses_the_projects_own_schema_in_one_line(tmp_path: Path):
    # (before anything starts: the schema it would drop at its start)
    result = kappa_shop_in(Path.cwd(), "chaos", "--schema", "kappa_shop", timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "kappa-shop: error: chaos drops its schema (kappa_shop) at its start: give it one of "
        "its own with --schema, not the project's (kappa_shop)"
    ]
    result = kappa_shop_in(Path.cwd(), "chaos", "--steps", "ingest,lunch", timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "kappa-shop: error: unknown step(s) lunch: choose among ingest, build, full-refresh, "
        "reprocess, compaction, live"
    ]
