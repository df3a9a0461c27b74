"""Ingestion: landed files -> append-only raw tables, exactly once.

A Spark Structured Streaming query reads the landing zone as text (one row per line, so a
line that is not JSON is kept like any other) with the `availableNow` trigger: it takes every
file not yet ingested, then stops. Each micro-batch is one *ingestion batch*; its id is the
streaming batch id plus one. For each batch, `foreachBatch` writes:

- every topic's lines into `raw_<topic>`, replacing the table partition
  `_ingestion_batch_id = <id>` (`insert overwrite ... partition (...)`), with the line
  verbatim (`raw_record`), the file it came from and the ingestion time;
- then one row into `raw_ingestion_batches` (same overwrite), the batch's receipt.

Exactly once: the query's checkpoint records which files make up batch N *before* N is
written, and marks N done only after foreachBatch returns. A run killed at any point is
re-run with the same files for N, whose overwrite replaces whatever the killed run left of N.
Nothing is skipped (a file is only marked done with its batch) and nothing is doubled (a
batch's partition is replaced, never appended to).

The checkpoint sits in the warehouse beside the tables it describes
(`<warehouse>/_checkpoints/<raw schema>/ingest`), so `make clean` removes both together, and
it is bound to one landing directory.

From Kafka (`KafkaSource`, `kappa-shop ingest --kafka`): the same query and batches, with
Spark's Kafka source instead of the file source, one topic per stream (`<prefix><stream>`),
offsets kept in the same checkpoint (so a batch's offset range is fixed before it is written,
as its files are).
A row is one Kafka record: its `raw_record` is the record as the broker holds it, a JSON object
of its topic, partition, offset, timestamp, key and value (the value verbatim, as a string),
and its `_source_file` is `kafka:<topic>/<partition>`; staging reads the event from the value
and where it lies in the log from the broker's fields. A raw schema is ingested from one kind
of source (the checkpoint is bound to it).

Where the SQL runs: on the `local` target the streaming query and the raw tables share one
embedded SparkSession, and foreachBatch inserts from a temporary view. On the `cluster` target
the tables live behind the Thrift Server: the streaming query is an application of its own on
the cluster's master, foreachBatch writes the batch as parquet files to
`<warehouse>/_staging/<raw schema>/batch-<id>` (replaced whole on a re-run) and the same
inserts run through the Thrift Server, reading those files. The checkpoint protocol is the
same, so is the guarantee.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.landed_files import (
    check_files_unchanged,
    files_of_batch_in,
    local_path,
    refuse_a_removed_file,
)
from kappa_shop.log.format import TOPICS, TOPICS_BY_NAME
from kappa_shop.runtime.warehouse import (
    SessionWarehouse,
    Warehouse,
    clear_unfinished_writes,
    columns,
    table_names,
    warehouse_dir,
)

BATCH_LOG_TABLE = "raw_ingestion_batches"
# Files are never forgotten: Spark's default (7 days) would silently skip a file that lands
# with an old modification time. The price is a checkpoint entry per file.
MAX_FILE_AGE = "36500d"


@dataclass
class IngestedBatch:
    """The receipt of one ingestion batch."""

    ingestion_batch_id: int
    ingested_at: str
    files: int
    records_by_topic: dict[str, int]

    @property
    def records(self) -> int:
        return sum(self.records_by_topic.values())


@dataclass
class IngestionReport:
    """What one ingestion run did."""

    raw_schema: str
    batches: list[IngestedBatch] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(batch.records for batch in self.batches)


@dataclass(frozen=True)
class KafkaSource:
    """Where ingestion reads the log from Kafka: the brokers, and client settings passed
    through to Spark's Kafka source as `kafka.<name>` (security.protocol, sasl.*, ssl.*, ...)."""

    bootstrap_servers: str
    options: dict[str, str] = field(default_factory=dict)
    # the topics are <topic_prefix><stream>: a namespace on a shared cluster ("shop."), or the
    # proof's own topics (kappa_shop.proof.verify)
    topic_prefix: str = ""

    def describe(self) -> str:
        return f"Kafka at {self.bootstrap_servers}"

    def topic_names(self) -> list[str]:
        """The log's topics on the brokers, one per stream, in TOPICS order."""
        return [self.topic_prefix + topic.name for topic in TOPICS]


def checkpoint_dir(warehouse: Warehouse, raw_schema: str) -> Path:
    """Where the ingestion query of `raw_schema` keeps its checkpoint."""
    return warehouse_dir(warehouse) / "_checkpoints" / raw_schema / "ingest"


def staging_dir(warehouse: Warehouse, raw_schema: str) -> Path:
    """Where ingestion stages batches for a Thrift Server to load (cluster target only)."""
    return warehouse_dir(warehouse) / "_staging" / raw_schema


def ingested_tables(warehouse: Warehouse, raw_schema: str) -> list[str]:
    """The raw tables of `raw_schema` that ingestion made (partitioned by ingestion batch)."""
    present = table_names(warehouse, raw_schema)
    return [
        topic.raw_table
        for topic in TOPICS
        if topic.raw_table in present
        and columns(warehouse, f"{raw_schema}.{topic.raw_table}")[1] == ["_ingestion_batch_id"]
    ]


def ensure_raw_tables(warehouse: Warehouse, raw_schema: str) -> None:
    """Create the raw schema and tables if missing; refuse tables ingestion did not make."""
    warehouse.sql(f"create schema if not exists {raw_schema}")
    tables = [topic.raw_table for topic in TOPICS]
    for table in tables:
        warehouse.sql(
            f"create table if not exists {raw_schema}.{table} ("
            " raw_record string, _source_file string, _ingested_at timestamp,"
            " _ingestion_batch_id bigint"
            ") using parquet partitioned by (_ingestion_batch_id)"
        )
    warehouse.sql(
        f"create table if not exists {raw_schema}.{BATCH_LOG_TABLE} ("
        " ingested_at timestamp, landed_file_count int, landed_record_count bigint,"
        " ingestion_batch_id bigint"
        ") using parquet partitioned by (ingestion_batch_id)"
    )
    for table, partition_column in [
        *((table, "_ingestion_batch_id") for table in tables),
        (BATCH_LOG_TABLE, "ingestion_batch_id"),
    ]:
        partitions = columns(warehouse, f"{raw_schema}.{table}")[1]
        if partitions != [partition_column]:
            raise KappaShopError(
                f"{raw_schema}.{table} exists but was not created by ingestion (it is not "
                f"partitioned by {partition_column}; the sample seeds load such tables): "
                "ingest into another schema (KAPPA_SHOP_SCHEMA) or `make clean`"
            )


def _lock_ingestion(checkpoint: Path, raw_schema: str) -> IO[str]:
    """Hold an OS lock on the checkpoint, or stop in one line: one ingestion into a raw schema
    at a time (two would write the same batch ids). The lock dies with its process, so a
    killed ingestion leaves none behind. Close the returned file to release it."""
    import fcntl

    path = checkpoint / "ingest.lock"
    handle = path.open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise KappaShopError(
            f"another ingestion into {raw_schema} is running (it holds {path}): one at a time; "
            "wait for it to finish. Nothing was ingested by this one."
        ) from None
    return handle


def _bind_source(checkpoint: Path, source: str) -> None:
    """One checkpoint follows one source (a landing directory, or Kafka); another would reuse
    batch ids."""
    marker = checkpoint / "landing_dir.txt"
    if marker.is_file():
        bound = marker.read_text().strip()
        if bound != source:
            raise KappaShopError(
                f"these raw tables are ingested from {bound}, not {source}: use that source, "
                "another schema (KAPPA_SHOP_SCHEMA), or `make clean`"
            )
        return
    checkpoint.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{source}\n")


def check_landing_zone(landing_dir: Path) -> Path:
    """The landing zone's topics/ folder, after checking that every landed file can be read.

    Spark's file source would fail on an unreadable file deep inside a micro-batch, with a
    stack trace; here it is one line naming the file, before anything is ingested."""
    topics_dir = landing_dir / "topics"
    if not landing_dir.is_dir():
        raise KappaShopError(f"landing directory {landing_dir} does not exist")
    if not topics_dir.is_dir():
        raise KappaShopError(
            f"{landing_dir} has no topics/ folder: not a landing zone "
            "(expected topics/<topic>/partition=<p>/*.jsonl)"
        )
    unreadable: list[str] = []
    for path in sorted(topics_dir.rglob("*.jsonl")):
        if path.is_dir():
            continue
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as error:
            unreadable.append(f"{path.relative_to(landing_dir)} ({error.strerror or error})")
    if unreadable:
        raise KappaShopError(
            f"cannot read {len(unreadable)} landed file(s) in {landing_dir}: "
            + "; ".join(unreadable[:3])
            + ("; ..." if len(unreadable) > 3 else "")
            + ". Nothing was ingested: make them readable or move them out of the landing zone."
        )
    return topics_dir


def ingest(
    spark: Any,
    source: Path | KafkaSource,
    raw_schema: str,
    progress: Callable[[str], None] = print,
    max_files_per_batch: int | None = None,
    pause_between_writes: float = 0.0,
    warehouse: Warehouse | None = None,
) -> IngestionReport:
    """Ingest everything the source holds that is not yet ingested into the raw tables of
    `raw_schema`: every landed file not yet ingested (a landing directory), or every record of
    the log's topics past the checkpoint's offsets (KafkaSource).

    `spark` runs the streaming query; `warehouse` holds the raw tables (by default the same
    embedded session; a Thrift Server's for the cluster target). For Kafka, `spark` must have
    Spark's Kafka connector (kappa_shop.log.produce.connector_jars) and `max_files_per_batch`
    caps the records of a batch instead.
    """
    from pyspark.errors import StreamingQueryException

    warehouse = warehouse or SessionWarehouse(spark)
    shared_session = isinstance(warehouse, SessionWarehouse) and warehouse.spark is spark
    if isinstance(source, KafkaSource):
        check_topics(spark, source)
        bound = f"kafka ({', '.join(source.topic_names())})"
    else:
        source = source.resolve()
        topics_dir = check_landing_zone(source)
        bound = str(source)
    ensure_raw_tables(warehouse, raw_schema)
    checkpoint = checkpoint_dir(warehouse, raw_schema)
    _bind_source(checkpoint, bound)
    lock = _lock_ingestion(checkpoint, raw_schema)
    try:
        # a killed ingestion's unfinished write would be merged into the next one's (its rows
        # twice): the raw tables are written only here, under this lock
        clear_unfinished_writes(
            warehouse, raw_schema, [topic.raw_table for topic in TOPICS] + [BATCH_LOG_TABLE]
        )
        staging = None if shared_session else staging_dir(warehouse, raw_schema)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)  # what a killed run staged is restaged

        report = IngestionReport(raw_schema=raw_schema)
        failure: list[BaseException] = []
        kafka = isinstance(source, KafkaSource)
        query_checkpoint = checkpoint / "query"

        def write_batch(batch: Any, epoch_id: int) -> None:
            try:
                report.batches.append(
                    _write_batch(
                        batch,
                        epoch_id + 1,
                        raw_schema,
                        warehouse,
                        staging,
                        progress,
                        pause_between_writes,
                        # the files the query assigned to this batch (a landing zone's)
                        None if kafka else lambda: files_of_batch_in(query_checkpoint, epoch_id),
                    )
                )
            except BaseException as error:  # kept to re-raise without Spark's wrapping
                failure.append(error)
                raise

        if isinstance(source, KafkaSource):
            lines = _kafka_records(spark, source, max_files_per_batch)
        else:
            lines = _landed_lines(spark, topics_dir, max_files_per_batch)
        query = (
            lines.writeStream.foreachBatch(write_batch)
            .option("checkpointLocation", str(query_checkpoint))
            .trigger(availableNow=True)
            .queryName(f"ingest_{raw_schema}")
            .start()
        )
        try:
            query.awaitTermination()
        except StreamingQueryException as error:
            if failure and isinstance(failure[0], KappaShopError):
                raise failure[0] from None
            cause = failure[0] if failure else error
            text = str(cause).strip()
            if isinstance(source, KafkaSource) and _LOST_OFFSETS in text:
                raise KappaShopError(
                    f"the checkpoint of {raw_schema} needs records that {source.describe()} "
                    "no longer has (deleted by the topic's retention, or the topic was "
                    "deleted and made again): "
                    + _lost_detail(text)
                    + ". Ingestion stopped there (the batches before it are in the raw "
                    "tables); to go on from what Kafka still has, ingest into a new schema "
                    "(KAPPA_SHOP_SCHEMA) and rebuild from it, or keep the log longer "
                    "(retention.ms=-1 on the topics)"
                ) from None
            first_line = text.splitlines()[0] if text else repr(cause)
            raise KappaShopError(f"ingestion failed: {first_line}") from None
        return report
    finally:
        lock.close()  # releases the lock (as a killed process's end does)


# what Spark's Kafka source says when offsets it must read are gone (failOnDataLoss)
_LOST_OFFSETS = "not available in Kafka any more"


def _lost_detail(text: str) -> str:
    """Which offsets of which partition, from Spark's data-loss error: "Could not read records
    in offset [0, 5) for topic partition web_events-0" (Spark 4.0)."""
    import re

    match = re.search(r"Reason: (Could not read records in offset \[\d+, \d+\) for topic "
                      r"partition \S+)", text)  # fmt: skip
    match = match or re.search(r"(\S+-\d+'s offset was changed from \d+ to \d+)", text)
    if match:
        return match[1].rstrip(".")
    lines = [line.strip() for line in text.splitlines() if "Kafka" in line]
    return (lines[0] if lines else text.strip().splitlines()[0])[:300]


def _landed_lines(spark: Any, topics_dir: Path, max_files_per_batch: int | None) -> Any:
    """The streaming lines of the landing zone: raw_record, _source_file, topic."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("text")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.jsonl")
        .option("maxFileAge", MAX_FILE_AGE)
    )
    if max_files_per_batch:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_batch))
    path = F.col("_metadata.file_path")
    return reader.load(str(topics_dir)).select(
        F.col("value").alias("raw_record"),
        F.regexp_extract(path, r"(topics/[^/]+/[^/]+/[^/]+)$", 1).alias("_source_file"),
        F.regexp_extract(path, r"topics/([^/]+)/", 1).alias("topic"),
        # the file as the batch listed it: a file that changes while it is read is refused
        # (landed_files.check_files_unchanged)
        path.alias("_file_path"),
        F.col("_metadata.file_size").alias("_file_size"),
    )


def check_topics(spark: Any, source: KafkaSource) -> None:
    """Stop in one line when no broker answers or a topic of the log is missing."""
    from kappa_shop.runtime.kafka import answer_of, check_brokers, check_connector, kafka_admin

    check_connector(spark)
    if not source.options:  # (a broker that needs TLS or SASL does not answer the probe)
        check_brokers(source.bootstrap_servers)
    with kafka_admin(spark, source.bootstrap_servers, source.options) as admin:
        present = set(answer_of(spark, admin.listTopics().names(), source.describe()))
    missing = [name for name in source.topic_names() if name not in present]
    if missing:
        raise KappaShopError(
            f"{source.describe()} has no topic {', '.join(missing)}: every stream of the log "
            "(var log_streams) is read from its topic; produce to it (`kappa-shop produce`) or "
            "create it. Nothing was ingested"
        )


def _kafka_records(spark: Any, source: KafkaSource, max_records_per_batch: int | None) -> Any:
    """The streaming records of the log's topics: raw_record (the broker's record as JSON),
    _source_file (kafka:<topic>/<partition>), topic."""
    from pyspark.sql import functions as F

    from kappa_shop.runtime.kafka import kafka_options

    reader = (
        spark.readStream.format("kafka")
        .options(**kafka_options(source.bootstrap_servers, source.options))
        .option("subscribe", ",".join(source.topic_names()))
        .option("startingOffsets", "earliest")
        # offsets the checkpoint needs that the broker deleted stop the query (one line above)
        .option("failOnDataLoss", "true")
        .option("kafka.allow.auto.create.topics", "false")
    )
    if max_records_per_batch:
        reader = reader.option("maxOffsetsPerTrigger", str(max_records_per_batch))
    value = F.col("value").cast("string")
    record = F.struct(
        "topic",
        "partition",
        "offset",
        "timestamp",
        F.col("key").cast("string").alias("key"),
        value.alias("value"),
        # JSON text is UTF-8: a value that is not would reach the raw table with its bad bytes
        # replaced (U+FFFD), so ingestion says so here (a field present only then) and staging
        # quarantines the record as invalid_utf8
        F.when(~F.call_function("is_valid_utf8", value), F.lit(True)).alias("value_not_utf8"),
    )
    return reader.load().select(
        F.to_json(record).alias("raw_record"),
        F.concat(F.lit("kafka:"), "topic", F.lit("/"), F.col("partition").cast("string")).alias(
            "_source_file"
        ),
        # the stream (the raw table's topic): the topic's name without the prefix
        F.col("topic").substr(len(source.topic_prefix) + 1, 1_000).alias("topic"),
    )


def _read_batch(
    landed: Any, listed_columns: list[str], batch_id: int
) -> tuple[dict[str, tuple[int, int]], dict[Path, int]]:
    """Read the batch's records, once (`landed` keeps them): its records and files per topic,
    and each read file's size as the batch listed it (a landing zone's; none from Kafka)."""
    from pyspark.sql import functions as F

    per_file = landed.groupBy("topic", "_source_file", *listed_columns).agg(
        F.count(F.lit(1)).alias("records")
    )
    try:
        rows = per_file.collect()
    except Exception as error:
        refuse_a_removed_file(error, batch_id)
        raise
    counts: dict[str, tuple[int, int]] = {}  # topic: (records, files)
    for row in rows:
        records, files = counts.get(row["topic"], (0, 0))
        counts[row["topic"]] = (records + row["records"], files + 1)
    sizes = (
        {local_path(row["_file_path"]): row["_file_size"] for row in rows} if listed_columns else {}
    )
    unknown = sorted(set(counts) - set(TOPICS_BY_NAME))
    if unknown:
        raise KappaShopError(
            f"the landing zone holds files of unknown topic(s) {', '.join(unknown)}; "
            f"known topics: {', '.join(TOPICS_BY_NAME)}. Move them out and run again"
        )
    return counts, sizes


def _write_batch(
    batch: Any,
    batch_id: int,
    raw_schema: str,
    warehouse: Warehouse,
    staging: Path | None,
    progress: Callable[[str], None],
    pause_between_writes: float,
    files_of_batch: Callable[[], list[Path]] | None = None,
) -> IngestedBatch:
    """Write one ingestion batch: each topic's partition, then the batch's receipt.

    With `staging`, the batch is first written there as files for the warehouse to read;
    otherwise the warehouse is this batch's own session and reads a temporary view.
    """
    ingested_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if pause_between_writes:
        # fault-injection mode: the batch's files are listed, not yet read
        progress(f"    reading batch {batch_id}; pausing {pause_between_writes:g} s")
        time.sleep(pause_between_writes)
    # a landing-zone batch's rows carry their file as the batch listed it (path and size)
    listed_columns = [name for name in ("_file_path", "_file_size") if name in batch.columns]
    landed = batch.select("raw_record", "_source_file", "topic", *listed_columns).persist()
    try:
        counts, sizes = _read_batch(landed, listed_columns, batch_id)
        if staging is None:
            # the batch's own session: its temporary views are not visible to others
            warehouse = SessionWarehouse(batch.sparkSession, warehouse.target)
            source = f"_kappa_shop_landed_{batch_id}"
            landed.createOrReplaceTempView(source)
        else:
            batch_dir = staging / f"batch-{batch_id}"
            landed.write.mode("overwrite").partitionBy("topic").parquet(str(batch_dir))
            source = f"parquet.`{batch_dir}`"
        for topic in TOPICS:
            if topic.name not in counts:
                continue
            warehouse.sql(
                f"insert overwrite table {raw_schema}.{topic.raw_table} "
                f"partition (_ingestion_batch_id = {batch_id}) "
                f"select raw_record, _source_file, timestamp'{ingested_at}' as _ingested_at "
                f"from {source} where topic = '{topic.name}'"
            )
            if pause_between_writes:
                # fault-injection mode: say where we are, then leave time to be killed here
                progress(
                    f"    wrote {topic.raw_table} (batch {batch_id}); "
                    f"pausing {pause_between_writes:g} s"
                )
                time.sleep(pause_between_writes)
        if files_of_batch is not None:
            check_files_unchanged(files_of_batch(), sizes, batch_id)
        files = sum(files for _, files in counts.values())
        records = sum(records for records, _ in counts.values())
        warehouse.sql(
            f"insert overwrite table {raw_schema}.{BATCH_LOG_TABLE} "
            f"partition (ingestion_batch_id = {batch_id}) "
            f"select timestamp'{ingested_at}', {files}, {records}"
        )
        if staging is None:
            batch.sparkSession.catalog.dropTempView(source)
        else:
            shutil.rmtree(staging / f"batch-{batch_id}", ignore_errors=True)
    finally:
        landed.unpersist()
    receipt = IngestedBatch(
        ingestion_batch_id=batch_id,
        ingested_at=ingested_at[:19],
        files=sum(files for _, files in counts.values()),
        records_by_topic={topic: records for topic, (records, _) in sorted(counts.items())},
    )
    progress(
        f"  ingestion batch {batch_id}: {receipt.files} files, {receipt.records:,} records "
        f"into {raw_schema}"
    )
    return receipt
