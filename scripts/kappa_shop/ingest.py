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
from kappa_shop.log_format import TOPICS, TOPICS_BY_NAME
from kappa_shop.warehouse import SessionWarehouse, Warehouse, columns, table_names, warehouse_dir

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


def _bind_landing(checkpoint: Path, landing_dir: Path) -> None:
    """One checkpoint follows one landing directory; a different one would reuse batch ids."""
    marker = checkpoint / "landing_dir.txt"
    if marker.is_file():
        bound = marker.read_text().strip()
        if bound != str(landing_dir):
            raise KappaShopError(
                f"these raw tables are ingested from {bound}, not {landing_dir}: use that "
                "landing directory, another schema (KAPPA_SHOP_SCHEMA), or `make clean`"
            )
        return
    checkpoint.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{landing_dir}\n")


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
    landing_dir: Path,
    raw_schema: str,
    progress: Callable[[str], None] = print,
    max_files_per_batch: int | None = None,
    pause_between_writes: float = 0.0,
    warehouse: Warehouse | None = None,
) -> IngestionReport:
    """Ingest every landed file not yet ingested into the raw tables of `raw_schema`.

    `spark` runs the streaming query; `warehouse` holds the raw tables (by default the same
    embedded session; a Thrift Server's for the cluster target).
    """
    from pyspark.errors import StreamingQueryException
    from pyspark.sql import functions as F

    landing_dir = landing_dir.resolve()
    topics_dir = check_landing_zone(landing_dir)
    warehouse = warehouse or SessionWarehouse(spark)
    shared_session = isinstance(warehouse, SessionWarehouse) and warehouse.spark is spark
    ensure_raw_tables(warehouse, raw_schema)
    checkpoint = checkpoint_dir(warehouse, raw_schema)
    _bind_landing(checkpoint, landing_dir)
    lock = _lock_ingestion(checkpoint, raw_schema)
    try:
        staging = None if shared_session else staging_dir(warehouse, raw_schema)
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)  # what a killed run staged is restaged

        report = IngestionReport(raw_schema=raw_schema)
        failure: list[BaseException] = []

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
                    )
                )
            except BaseException as error:  # kept to re-raise without Spark's wrapping
                failure.append(error)
                raise

        reader = (
            spark.readStream.format("text")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.jsonl")
            .option("maxFileAge", MAX_FILE_AGE)
        )
        if max_files_per_batch:
            reader = reader.option("maxFilesPerTrigger", str(max_files_per_batch))
        lines = reader.load(str(topics_dir)).select(
            F.col("value").alias("raw_record"), F.col("_metadata.file_path").alias("file_path")
        )
        query = (
            lines.writeStream.foreachBatch(write_batch)
            .option("checkpointLocation", str(checkpoint / "query"))
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
            first_line = str(cause).strip().splitlines()[0] if str(cause).strip() else repr(cause)
            raise KappaShopError(f"ingestion failed: {first_line}") from None
        return report
    finally:
        lock.close()  # releases the lock (as a killed process's end does)


def _write_batch(
    batch: Any,
    batch_id: int,
    raw_schema: str,
    warehouse: Warehouse,
    staging: Path | None,
    progress: Callable[[str], None],
    pause_between_writes: float,
) -> IngestedBatch:
    """Write one ingestion batch: each topic's partition, then the batch's receipt.

    With `staging`, the batch is first written there as files for the warehouse to read;
    otherwise the warehouse is this batch's own session and reads a temporary view.
    """
    from pyspark.sql import functions as F

    ingested_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    landed = batch.select(
        "raw_record",
        F.regexp_extract("file_path", r"(topics/[^/]+/[^/]+/[^/]+)$", 1).alias("_source_file"),
        F.regexp_extract("file_path", r"topics/([^/]+)/", 1).alias("topic"),
    ).persist()
    try:
        per_topic = landed.groupBy("topic").agg(
            F.count(F.lit(1)).alias("records"), F.countDistinct("_source_file").alias("files")
        )
        counts = {row["topic"]: (row["records"], row["files"]) for row in per_topic.collect()}
        unknown = sorted(set(counts) - set(TOPICS_BY_NAME))
        if unknown:
            raise KappaShopError(
                f"the landing zone holds files of unknown topic(s) {', '.join(unknown)}; "
                f"known topics: {', '.join(TOPICS_BY_NAME)}. Move them out and run again"
            )
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
