"""Producing a generated log to Kafka: the broker-side twin of `deliver`.

    kappa-shop produce --log DIR (--batches 1-3 | --all) [--bootstrap-servers HOST:PORT]

Each arrival batch of the log becomes records of the topics it names (one topic per stream),
in the partition the generator gave each record and in its offset order, so that a topic
produced from its start holds every record at the offset the landing files give it. A record
is what a producer writes, not a landing line: its key is the Kafka record key (null for a
record whose key is null) and its value the event without the envelope the broker supplies
(topic, partition, offset, key); a line that is not a JSON object is the value as it is, byte
for byte. Every imperfection of the log stays: redeliveries are records at new offsets,
conflicting redeliveries, malformed values, late and out-of-order events.

Spark's Kafka sink writes them (the `spark-sql-kafka-0-10` artifact of the installed PySpark,
fetched by PySpark's Ivy once: connector_jars): each batch is one Spark task, so the records
of a partition are sent in order, by an idempotent producer (acks=all) that keeps that order
through retries.

Safe to repeat, as `deliver` is: a partition that already holds a batch's records is left
alone; one that ends elsewhere (another log, or a batch produced out of order) stops the run
in one line, before anything of that batch is sent.

The topics are `<prefix><stream>` (a namespace, or a proof's own topics); those missing are
created first, with the partitions the log has, so that every stream's topic exists even when
its first records come later. The proof (kappa_shop.proof.verify) produces in its own schedule's
order instead (`at_log_offsets=False`): batches out of order and a batch sent twice, each
record at the next offset of its partition, as a broker takes what producers send.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.log.format import TOPICS, encode
from kappa_shop.log.generator import read_manifest
from kappa_shop.runtime.kafka import create_topics, kafka_options

# what the broker records for every record itself, so a producer does not write it
BROKER_FIELDS = ("topic", "partition", "offset", "key")


@dataclass(frozen=True)
class Record:
    """One record to produce."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes


@dataclass
class Produced:
    """What one `produce` did."""

    batches: list[int]
    records_by_topic: dict[str, int] = field(default_factory=dict)
    partitions_already_there: int = 0

    @property
    def records(self) -> int:
        return sum(self.records_by_topic.values())


def as_record(topic: str, partition: int, line: str) -> Record:
    """A landing line as a producer would have written it (see the module docstring)."""
    try:
        parsed = json.loads(line)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return Record(topic, partition, None, line.encode("utf-8"))
    key = parsed.get("key")
    value = {name: item for name, item in parsed.items() if name not in BROKER_FIELDS}
    return Record(
        topic,
        partition,
        key.encode("utf-8") if isinstance(key, str) else None,
        encode(value).encode("utf-8"),
    )


def log_partitions(log_dir: Path) -> int:
    """How many partitions each topic of a generated log has."""
    return int(read_manifest(log_dir)["config"]["partitions"])


def end_offsets(
    spark: Any,
    bootstrap_servers: str,
    topic_prefix: str = "",
    options: dict[str, str] | None = None,
) -> dict[tuple[str, int], int]:
    """The next offset of every partition of the log's topics that holds records (keyed by
    the stream's topic, without the prefix)."""
    from pyspark.sql import functions as F

    pattern = "^(" + "|".join(re.escape(topic_prefix + topic.name) for topic in TOPICS) + ")$"
    try:
        frame = (
            spark.read.format("kafka")
            .options(**kafka_options(bootstrap_servers, options))
            .option("subscribePattern", pattern)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
        )
        rows = frame.groupBy("topic", "partition").agg(F.max("offset").alias("last")).collect()
    except Exception as error:  # Spark wraps the client's errors: say which broker
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise KappaShopError(
            f"cannot read the topics at Kafka {bootstrap_servers}: {first[:300]}. Is the broker "
            "up (`kappa-shop kafka up`, or --bootstrap-servers)?"
        ) from None
    return {(row["topic"][len(topic_prefix) :], row["partition"]): row["last"] + 1 for row in rows}


def produce(
    spark: Any,
    log_dir: Path,
    batches: Iterable[int],
    bootstrap_servers: str,
    progress: Callable[[str], None] = print,
    topic_prefix: str = "",
    at_log_offsets: bool = True,
    options: dict[str, str] | None = None,
) -> Produced:
    """Produce the given arrival batches of `log_dir` to their topics (module docstring). With
    `at_log_offsets` False, every record of the batches is sent, at the partitions' next
    offsets (the proof's schedule)."""
    from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

    manifest = read_manifest(log_dir)
    known = {entry["batch"]: entry["directory"] for entry in manifest["batches"]}
    chosen = list(batches)
    for batch in chosen:
        if batch not in known:
            raise KappaShopError(f"{log_dir} has no arrival batch {batch} (it has 1..{len(known)})")
    partitions = log_partitions(log_dir)
    topics = {topic_prefix + topic.name: partitions for topic in TOPICS}
    create_topics(spark, bootstrap_servers, topics, options)
    ends = end_offsets(spark, bootstrap_servers, topic_prefix, options) if at_log_offsets else {}
    schema = StructType(
        [
            StructField("topic", StringType(), False),
            StructField("partition", IntegerType(), False),
            StructField("key", BinaryType(), True),
            StructField("value", BinaryType(), False),
        ]
    )
    report = Produced(batches=chosen)
    for batch in chosen:
        records: list[Record] = []
        for path in sorted((log_dir / known[batch]).rglob("*.jsonl")):
            topic, partition_text, first_text = path.stem.split("+")
            partition, first = int(partition_text), int(first_text)
            lines = path.read_text(encoding="utf-8").split("\n")[:-1]
            # (the proof's schedule: each record at the next offset, whatever it is)
            end = ends.get((topic, partition), 0) if at_log_offsets else first
            if at_log_offsets and end >= first + len(lines):
                report.partitions_already_there += 1
                continue
            if end != first:
                raise KappaShopError(
                    f"topic {topic} partition {partition} ends at offset {end}, but batch "
                    f"{batch} starts it at offset {first}: "
                    + (
                        "produce the batches before it first"
                        if end < first
                        else "the topic holds records of another log; produce into a fresh "
                        "broker or topics"
                    )
                    + ". Nothing of this batch was sent"
                )
            records += [as_record(topic_prefix + topic, partition, line) for line in lines]
            ends[(topic, partition)] = first + len(lines)
            report.records_by_topic[topic] = report.records_by_topic.get(topic, 0) + len(lines)
        if not records:
            continue
        # one task: the records of each partition leave in offset order
        frame = spark.createDataFrame(
            [(r.topic, r.partition, r.key, r.value) for r in records], schema
        ).coalesce(1)
        (
            frame.write.format("kafka")
            .options(**kafka_options(bootstrap_servers, options))
            .option("kafka.acks", "all")
            .option("kafka.enable.idempotence", "true")
            .option("kafka.linger.ms", "20")
            .save()
        )
        progress(f"  batch {batch}: {len(records):,} records produced to {bootstrap_servers}")
    return report
