"""Ingestion on a real Spark session: every landed line reaches its raw table exactly once,
reconciled with the generator's manifest; reruns add nothing; a run killed with SIGKILL in
the middle of a batch and run again leaves the same tables as a run never interrupted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import copy_project, kill_inside_batch
from log_oracle import LandedLine, classify, landed_lines

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import ingest
from kappa_shop.log.delivery import MALFORMED_KINDS
from kappa_shop.log.format import TOPICS
from kappa_shop.log.generator import GeneratorConfig, generate
from kappa_shop.log.landing import batch_numbers, deliver

LOG = GeneratorConfig(
    seed=5, events=15_000, days=2, batches=5, malformed_fraction=0.01, conflict_fraction=0.004
)
SCHEMA = "ingest_test_raw"


def _rows(spark, relation: str) -> Counter:
    frame = spark.table(relation) if "/" not in relation else spark.read.parquet(relation)
    return Counter(
        tuple(row)
        for row in frame.select("_ingestion_batch_id", "_source_file", "raw_record").collect()
    )


@pytest.fixture(scope="module")
def ingested(spark, tmp_path_factory):
    """A generated log, delivered and ingested one arrival batch at a time."""
    root = tmp_path_factory.mktemp("ingest")
    log_dir, landing = root / "log", root / "landing"
    generate(LOG, log_dir, progress=lambda message: None)
    reports = []
    for batch in batch_numbers(log_dir):
        deliver(log_dir, landing, [batch])
        reports.append(ingest(spark, landing, SCHEMA, progress=lambda message: None))
    manifest = json.loads((log_dir / "manifest.json").read_text())
    return log_dir, landing, manifest, reports


def test_each_arrival_batch_becomes_one_ingestion_batch(ingested, spark):
    _, _, manifest, reports = ingested
    assert [[batch.ingestion_batch_id for batch in report.batches] for report in reports] == [
        [number] for number in range(1, len(manifest["batches"]) + 1)
    ]
    receipts = spark.sql(
        f"select ingestion_batch_id, landed_file_count, landed_record_count "
        f"from {SCHEMA}.raw_ingestion_batches order by ingestion_batch_id"
    ).collect()
    assert [tuple(row) for row in receipts] == [
        (entry["batch"], entry["files"], entry["records"]) for entry in manifest["batches"]
    ]


def test_raw_tables_hold_every_landed_line_verbatim(ingested, spark):
    log_dir, _, _, _ = ingested
    expected: dict[str, Counter] = {topic.name: Counter() for topic in TOPICS}
    for line in landed_lines(log_dir):
        name = f"{line.topic}+{line.partition}+{line.file_first_offset:012d}.jsonl"
        source_file = f"topics/{line.topic}/partition={line.partition}/{name}"
        expected[line.topic][(line.batch, source_file, line.text)] += 1

    for topic in TOPICS:
        assert _rows(spark, f"{SCHEMA}.{topic.raw_table}") == expected[topic.name], topic.name


def test_raw_rows_reconcile_with_the_manifest_per_stream_and_imperfection(ingested, spark):
    _, _, manifest, _ = ingested
    lines = []
    for topic in TOPICS:
        for batch, source_file, text in _rows(spark, f"{SCHEMA}.{topic.raw_table}").elements():
            partition = int(source_file.split("/")[2].split("=")[1])
            lines.append(LandedLine(batch, topic.name, partition, 0, text))
    classified = classify(sorted(lines, key=lambda line: line.batch))

    for topic in TOPICS:
        expected = manifest["by_topic"][topic.name]
        found = classified.counts[topic.name]
        assert sum(found.values()) == expected["records"]
        for category in ("valid", "duplicate", "conflicting_duplicate"):
            assert found[category] == expected[category], (topic.name, category)
        for kind in MALFORMED_KINDS:
            assert found[kind] == expected["malformed"][kind], (topic.name, kind)
        assert classified.drift[topic.name] == expected["schema_drift"]


def test_running_again_with_nothing_new_adds_nothing(ingested, spark):
    _, landing, manifest, _ = ingested
    before = spark.table(f"{SCHEMA}.raw_web_events").count()

    report = ingest(spark, landing, SCHEMA, progress=lambda message: None)

    assert report.batches == []
    assert spark.table(f"{SCHEMA}.raw_web_events").count() == before
    assert before == manifest["by_topic"]["web_events"]["records"]


def test_a_second_ingestion_at_once_is_refused_and_adds_nothing(ingested, spark):
    # another ingestion into the same raw schema holds the checkpoint's lock
    import fcntl

    from kappa_shop.ingest.ingestion import checkpoint_dir
    from kappa_shop.runtime.warehouse import SessionWarehouse

    log_dir, landing, _, _ = ingested
    before = spark.table(f"{SCHEMA}.raw_web_events").count()
    deliver(log_dir, landing, batch_numbers(log_dir))  # nothing new: all delivered already
    lock_path = checkpoint_dir(SessionWarehouse(spark), SCHEMA) / "ingest.lock"
    with lock_path.open("a") as other_ingestion:
        fcntl.flock(other_ingestion, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(KappaShopError, match=f"another ingestion into {SCHEMA} is running"):
            ingest(spark, landing, SCHEMA, progress=lambda message: None)
    assert spark.table(f"{SCHEMA}.raw_web_events").count() == before
    # the lock goes with its holder: the next ingestion runs
    assert ingest(spark, landing, SCHEMA, progress=lambda message: None).batches == []


def test_a_schema_follows_one_landing_directory(ingested, spark, tmp_path):
    other = tmp_path / "other-landing"
    (other / "topics").mkdir(parents=True)
    with pytest.raises(KappaShopError, match="ingested from"):
        ingest(spark, other, SCHEMA, progress=lambda message: None)


def test_clear_errors_for_a_bad_landing_zone(spark, tmp_path):
    with pytest.raises(KappaShopError, match="does not exist"):
        ingest(spark, tmp_path / "missing", "ingest_errors_raw")
    (tmp_path / "not-a-landing").mkdir()
    with pytest.raises(KappaShopError, match="no topics/ folder"):
        ingest(spark, tmp_path / "not-a-landing", "ingest_errors_raw")

    unknown = tmp_path / "unknown" / "topics" / "clickstream" / "partition=0"
    unknown.mkdir(parents=True)
    (unknown / "clickstream+0+000000000000.jsonl").write_text('{"topic":"clickstream"}\n')
    with pytest.raises(KappaShopError, match="unknown topic"):
        ingest(spark, tmp_path / "unknown", "ingest_unknown_raw", progress=lambda message: None)
    assert spark.table("ingest_unknown_raw.raw_ingestion_batches").count() == 0


def test_refuses_raw_tables_it_did_not_create(spark, tmp_path):
    spark.sql("create schema if not exists ingest_foreign_raw")
    spark.sql(
        "create table if not exists ingest_foreign_raw.raw_web_events (raw_record string, "
        "_source_file string, _ingested_at timestamp, _ingestion_batch_id bigint) using parquet"
    )
    (tmp_path / "landing" / "topics").mkdir(parents=True)
    with pytest.raises(KappaShopError, match="not created by ingestion"):
        ingest(spark, tmp_path / "landing", "ingest_foreign_raw")


def _web_events(landing: Path, count: int) -> tuple[Path, list[str]]:
    """The landing zone's directory of web_events' partition 0 (made), and `count` lines of
    web events for it, at offsets 0.."""
    from kappa_shop.log.format import encode

    directory = landing / "topics" / "web_events" / "partition=0"
    directory.mkdir(parents=True)
    lines = [
        encode({"topic": "web_events", "partition": 0, "offset": offset, "key": "u-1",
                "event_id": f"e-{offset}"})
        for offset in range(count)
    ]  # fmt: skip
    return directory, lines


def test_a_file_still_being_written_is_refused_then_read_whole(spark, tmp_path):
    # a producer that writes straight into the landing zone (not under a hidden name, then a
    # rename): the batch that lists its file half-written sees it grow while it reads it, says
    # so in one error and commits nothing; the next ingestion reads the same file, whole
    landing = tmp_path / "landing"
    directory, lines = _web_events(landing, 6)
    growing = directory / "web_events+0+000000000000.jsonl"
    growing.write_text("".join(line + "\n" for line in lines[:3]) + lines[3][:20])
    (landing / "topics" / "searches" / "partition=0").mkdir(parents=True)
    other = landing / "topics" / "searches" / "partition=0" / "searches+0+000000000000.jsonl"
    other.write_text('{"topic": "searches", "partition": 0, "offset": 0, "key": "u-1"}\n')
    schema = "growing_file_raw"

    rest_written = []

    def write_the_rest(message: str) -> None:
        # the producer goes on writing while the batch reads (after its first raw table)
        if "wrote " in message and not rest_written:
            rest_written.append(message)
            with growing.open("a") as handle:
                handle.write(lines[3][20:] + "\n" + "".join(line + "\n" for line in lines[4:]))

    with pytest.raises(KappaShopError) as refused:
        ingest(spark, landing, schema, progress=write_the_rest, pause_between_writes=0.1)
    message = str(refused.value)
    assert message.startswith(f"landed file {growing} changed while ingestion batch 1 read it ("), (
        message
    )
    assert "Batch 1 was not committed: ingest again once the file is complete" in message
    assert not spark.table(f"{schema}.raw_ingestion_batches").count()  # no receipt

    report = ingest(spark, landing, schema, progress=lambda message: None)
    assert [batch.ingestion_batch_id for batch in report.batches] == [1]  # the same batch, again
    rows = spark.table(f"{schema}.raw_web_events").collect()
    assert sorted(row["raw_record"] for row in rows) == sorted(lines)  # each line once, whole
    assert {row["_ingestion_batch_id"] for row in rows} == {1}
    assert spark.table(f"{schema}.raw_searches").count() == 1


def test_a_killed_writes_task_output_is_cleared_not_merged_into_the_next_batch(spark, tmp_path):
    # a kill after a raw write's tasks committed and before its job did leaves their output in
    # the table's `_temporary`; Spark's next static-partition overwrite of the table would
    # merge it in with its own (SPARK-29037): ingestion clears it first, under its lock
    landing = tmp_path / "landing"
    directory, lines = _web_events(landing, 4)
    first = directory / "web_events+0+000000000000.jsonl"
    first.write_text("".join(line + "\n" for line in lines[:2]))
    schema = "unfinished_write_raw"
    ingest(spark, landing, schema, progress=lambda message: None)
    location = next(
        row["data_type"]
        for row in spark.sql(f"describe table extended {schema}.raw_web_events").collect()
        if row["col_name"] == "Location"
    )
    table = Path(location.removeprefix("file:"))
    task = table / "_temporary" / "0" / "task_202612060000000_0003_m_000000"
    stale = task / "_ingestion_batch_id=1"
    stale.mkdir(parents=True)
    for written in (table / "_ingestion_batch_id=1").glob("part-*"):
        (stale / written.name.replace("part-", "part-killed-")).write_bytes(written.read_bytes())
    (directory / "web_events+0+000000000002.jsonl").write_text(
        "".join(line + "\n" for line in lines[2:])
    )
    report = ingest(spark, landing, schema, progress=lambda message: None)
    assert [batch.ingestion_batch_id for batch in report.batches] == [2]
    rows = spark.table(f"{schema}.raw_web_events").collect()
    assert sorted((row["_ingestion_batch_id"], row["raw_record"]) for row in rows) == sorted(
        [(1, line) for line in lines[:2]] + [(2, line) for line in lines[2:]]
    )
    assert not (table / "_temporary").exists()


def test_a_file_removed_after_its_batch_listed_it_is_refused_in_one_line(spark, tmp_path):
    # landed files are the log and are never removed; one removed between its batch's listing
    # and its read stops the batch with one line naming it, nothing committed; put back, the
    # next ingestion reads the batch whole
    landing = tmp_path / "landing"
    directory = landing / "topics" / "web_events" / "partition=0"
    directory.mkdir(parents=True)
    kept = directory / "web_events+0+000000000000.jsonl"
    kept.write_text('{"topic": "web_events", "partition": 0, "offset": 0, "key": "u-1"}\n')
    removed = directory / "web_events+0+000000000001.jsonl"
    line = '{"topic": "web_events", "partition": 0, "offset": 1, "key": "u-1"}\n'
    removed.write_text(line)
    schema = "removed_file_raw"

    def remove_it(message: str) -> None:
        if "reading batch 1" in message and removed.exists():
            removed.unlink()  # listed in batch 1, not yet read

    with pytest.raises(KappaShopError) as refused:
        ingest(spark, landing, schema, progress=remove_it, pause_between_writes=0.1)
    assert str(refused.value) == (
        f"landed file {removed} was removed after ingestion batch 1 listed it: landed files are "
        "the log and are never removed. Nothing of the batch was committed: put the file back "
        "and ingest again (the batch reads the files it listed)"
    )
    assert not spark.table(f"{schema}.raw_ingestion_batches").count()  # no receipt
    # again without it: Spark would replay the batch without the missing file; refused again
    with pytest.raises(KappaShopError) as again:
        ingest(spark, landing, schema, progress=lambda message: None)
    assert str(again.value) == str(refused.value)
    assert not spark.table(f"{schema}.raw_ingestion_batches").count()

    removed.write_text(line)
    report = ingest(spark, landing, schema, progress=lambda message: None)
    assert [batch.ingestion_batch_id for batch in report.batches] == [1]
    assert spark.table(f"{schema}.raw_web_events").count() == 2


def test_a_batch_replayed_after_a_kill_between_spark_s_two_logs_reads_its_own_files(
    spark, tmp_path
):
    # Spark's file source logs a batch's files (sources/0/<n>) before the query logs the
    # batch's offsets (offsets/<n>); a kill between the two leaves the files logged and the
    # batch not. The replay then reads those files and the new ones as one batch, and from
    # there on the two logs' numbers part: each batch's files (checked unchanged before its
    # receipt) are found through the offsets log, never by the batch's own number
    from kappa_shop.ingest.ingestion import checkpoint_dir
    from kappa_shop.runtime.warehouse import SessionWarehouse

    landing = tmp_path / "landing"
    directory = landing / "topics" / "web_events" / "partition=0"
    directory.mkdir(parents=True)
    schema = "replayed_batch_raw"

    def land(offset: int) -> str:
        line = json.dumps({"topic": "web_events", "partition": 0, "offset": offset, "key": "u"})
        (directory / f"web_events+0+{offset:012d}.jsonl").write_text(line + "\n")
        return line

    def ingested() -> list[int]:
        report = ingest(spark, landing, schema, progress=lambda message: None)
        return [batch.ingestion_batch_id for batch in report.batches]

    lines = [land(0)]
    assert ingested() == [1]
    lines.append(land(1))
    assert ingested() == [2]
    # the state the kill leaves: batch 2's files logged by the source, nothing else of it
    query = checkpoint_dir(SessionWarehouse(spark), schema) / "query"
    for log in ("offsets", "commits"):
        for name in ("1", ".1.crc"):  # (the query's batch 1 is ingestion batch 2)
            (query / log / name).unlink()
    spark.sql(f"alter table {schema}.raw_web_events drop partition (_ingestion_batch_id = 2)")
    spark.sql(f"alter table {schema}.raw_ingestion_batches drop partition (ingestion_batch_id = 2)")

    lines.append(land(2))
    assert ingested() == [2]  # the replay: the logged file and the new one
    lines.append(land(3))
    assert ingested() == [3]  # (read as batch 2's files by the source's numbering)
    rows = spark.table(f"{schema}.raw_web_events").collect()
    batches = {json.loads(row["raw_record"])["offset"]: row["_ingestion_batch_id"] for row in rows}
    assert len(rows) == 4 and sorted(row["raw_record"] for row in rows) == sorted(lines)
    assert batches == {0: 1, 1: 2, 2: 2, 3: 3}
    receipts = spark.table(f"{schema}.raw_ingestion_batches").collect()
    assert sorted((row["ingestion_batch_id"], row["landed_file_count"]) for row in receipts) == [
        (1, 1), (2, 2), (3, 1)
    ]  # fmt: skip


def _ingest_command(project: Path, landing: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kappa_shop",
        "--project-dir",
        str(project),
        "ingest",
        "--landing",
        str(landing),
        "--max-files-per-batch",
        "10",
        *extra,
    ]


def _environment(project: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(
        DBT_PROFILES_DIR=str(project),
        SPARK_CONF_DIR=str(project / "conf"),
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONUNBUFFERED="1",
    )
    environment.pop("KAPPA_SHOP_SCHEMA", None)
    return environment


def test_killed_mid_batch_then_rerun_equals_an_uninterrupted_run(spark, tmp_path):
    # A separate project copy: its Spark runs in other processes, with their own metastore.
    project = copy_project(tmp_path / "killed-project")
    log_dir, landing = tmp_path / "log", tmp_path / "landing"
    generate(GeneratorConfig(seed=9, events=4_000, days=1, batches=4), log_dir, lambda m: None)
    deliver(log_dir, landing, batch_numbers(log_dir))
    # distinct modification times: the file source orders a batch's files by them
    for number, path in enumerate(sorted(landing.rglob("*.jsonl"))):
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))
    files = len(list(landing.rglob("*.jsonl")))
    assert files > 30  # enough for several batches of 10 files

    raw_dir = project / "spark-warehouse" / "kappa_shop_raw.db"
    kill_inside_batch(
        _ingest_command(project, landing, "--pause-between-writes", "1"),
        project,
        _environment(project),
        raw_dir,
    )

    rerun = subprocess.run(
        _ingest_command(project, landing),
        cwd=project,
        env=_environment(project),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "ingestion batch 3:" in rerun.stdout  # the interrupted batch, replayed

    reference = ingest(spark, landing, "uninterrupted_raw", max_files_per_batch=10)
    assert len(reference.batches) >= 4
    for topic in TOPICS:
        recovered = _rows(spark, str(raw_dir / topic.raw_table))
        assert recovered == _rows(spark, f"uninterrupted_raw.{topic.raw_table}"), topic.name
    receipts = spark.read.parquet(str(raw_dir / "raw_ingestion_batches"))
    assert sorted(row["ingestion_batch_id"] for row in receipts.collect()) == list(
        range(1, len(reference.batches) + 1)
    )
