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
its first records come later. The proof (kappa_shop.verify) produces in its own schedule's
order instead (`at_log_offsets=False`): batches out of order and a batch sent twice, each
record at the next offset of its partition, as a broker takes what producers send.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kappa_shop.cluster import LOOPBACK
from kappa_shop.errors import KappaShopError
from kappa_shop.generator import read_manifest
from kappa_shop.log_format import TOPICS, encode

# what the broker records for every record itself, so a producer does not write it
BROKER_FIELDS = ("topic", "partition", "offset", "key")


# The connector depends on spark-token-provider-kafka of its own version (Kafka's delegation
# tokens). Some Maven mirrors lack that artifact's 4.0.1 (this project's CI machines' mirror
# does); its 4.0.0 has the same classes the connector calls (the module did not change between
# the two releases), so the connector's dependency on it is replaced by that version.
TOKEN_PROVIDER = "spark-token-provider-kafka-0-10_2.13"
TOKEN_PROVIDER_VERSION = "4.0.0"


def connector_jars(progress: Callable[[str], None] = print) -> list[Path]:
    """Spark's Kafka connector of the installed PySpark (Scala 2.13) and what it needs, resolved
    from Maven Central (KAPPA_SHOP_MAVEN_REPOSITORY) by PySpark's Ivy once, into
    ~/.cache/kappa-shop/spark-kafka-<version>/ (one line when that fails)."""
    from pyspark import __version__

    from kappa_shop.cluster import MAVEN_REPOSITORY
    from kappa_shop.kafka import cache_directory, resolve_with_ivy

    directory = cache_directory() / f"spark-kafka-{__version__}" / "jars"
    if (directory / ".complete").is_file():
        return _not_in_pyspark(directory)
    module = (
        "<ivy-module version='2.0'><info organisation='kappa-shop' module='spark-kafka'/>"
        "<dependencies>"
        f"<dependency org='org.apache.spark' name='spark-sql-kafka-0-10_2.13' rev='{__version__}'"
        " conf='default->default'>"
        f"<exclude module='{TOKEN_PROVIDER}'/></dependency>"
        f"<dependency org='org.apache.spark' name='{TOKEN_PROVIDER}' rev='{TOKEN_PROVIDER_VERSION}'"
        " conf='default->master'/>"
        "</dependencies></ivy-module>\n"
    )
    progress(f"  fetching Spark's Kafka connector {__version__} from {MAVEN_REPOSITORY} (once)")
    resolve_with_ivy(module, directory, f"Spark's Kafka connector {__version__}")
    return _not_in_pyspark(directory)


def _not_in_pyspark(directory: Path) -> list[Path]:
    """The jars of `directory` whose artifact PySpark does not ship already (Scala's library,
    snappy, ...): one copy of each class on the classpath."""
    from kappa_shop.cluster import spark_home

    def artifact(jar: Path) -> str:
        return re.sub(r"-\d[^-]*(-[a-z]+)?\.jar$", "", jar.name)

    shipped = {artifact(jar) for jar in (spark_home() / "jars").glob("*.jar")}
    return sorted(jar for jar in directory.glob("*.jar") if artifact(jar) not in shipped)


def default_bootstrap_servers() -> str:
    """KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the broker of `kappa-shop kafka up`."""
    from kappa_shop.kafka import broker_port

    return os.environ.get("KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS") or f"{LOOPBACK}:{broker_port()}"


def kafka_spark(app_name: str = "kappa_shop_produce") -> Any:
    """A local SparkSession with the Kafka connector (no metastore: it writes no tables)."""
    from pyspark.sql import SparkSession

    jars = ",".join(str(jar) for jar in connector_jars())
    return (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars", jars)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.driver.host", LOOPBACK)
        .getOrCreate()
    )


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


def kafka_options(bootstrap_servers: str, options: dict[str, str] | None) -> dict[str, str]:
    """Spark's Kafka options: the brokers and the client settings (`kafka.<name>`)."""
    settings = {f"kafka.{name}": value for name, value in (options or {}).items()}
    return {"kafka.bootstrap.servers": bootstrap_servers, **settings}


def check_connector(spark: Any) -> None:
    """Stop in one line when `spark` has no Kafka connector: it must be asked for when the
    process's Spark starts (connector_jars; `kappa-shop ingest --kafka` and `verify --kafka` do)."""
    from py4j.java_gateway import JavaClass

    if not isinstance(spark.sparkContext._jvm.org.apache.kafka.clients.admin.Admin, JavaClass):
        raise KappaShopError(
            "this process's Spark started without Spark's Kafka connector, so it cannot read or "
            "write Kafka: start it with the jars of kappa_shop.produce.connector_jars() "
            "(`kappa-shop ingest --kafka` and `kappa-shop verify --kafka` do)"
        )


def check_brokers(bootstrap_servers: str) -> None:
    """Stop in one line, before Spark starts, when no listed broker answers Kafka's protocol
    (a Kafka client would retry for minutes). Only for brokers without TLS or SASL: the probe
    speaks plain Kafka."""
    from kappa_shop.kafka import answers

    addresses = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            raise KappaShopError(
                f"bootstrap servers {bootstrap_servers!r}: each must be HOST:PORT, comma-separated"
            )
        addresses.append((host.strip("[]"), int(port)))
    if not any(answers(port, host) for host, port in addresses):
        raise KappaShopError(
            f"no Kafka broker answers at {bootstrap_servers}: start one (`kappa-shop kafka up`) "
            "or name yours with --bootstrap-servers. Nothing was sent"
        )


@contextmanager
def kafka_admin(
    spark: Any, bootstrap_servers: str, options: dict[str, str] | None = None
) -> Iterator[Any]:
    """Kafka's own admin client, from the Kafka connector's jars on `spark`'s classpath;
    `options` are client settings (security.protocol, sasl.*, ...). Closed after the block."""
    jvm = spark.sparkContext._jvm
    settings = jvm.java.util.Properties()
    settings.put("bootstrap.servers", bootstrap_servers)
    for name, value in (options or {}).items():
        settings.put(name, value)
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(settings)
    try:
        yield admin
    finally:
        admin.close()


def _wait(spark: Any, future: Any) -> Any:
    """The value of a Kafka client's future, waiting at most a minute."""
    return future.get(60, spark.sparkContext._jvm.java.util.concurrent.TimeUnit.SECONDS)


def create_topics(
    spark: Any,
    bootstrap_servers: str,
    partitions: dict[str, int],
    options: dict[str, str] | None = None,
) -> list[str]:
    """Create each topic of `partitions` (name: partition count) that the brokers lack, with
    the brokers' replication factor; stop in one line when one has fewer partitions than the
    log gives records to. The names of the topics created."""
    jvm = spark.sparkContext._jvm
    with kafka_admin(spark, bootstrap_servers, options) as admin:
        present = set(_wait(spark, admin.listTopics().names()))
        there = [name for name in partitions if name in present]
        if there:
            described = _wait(spark, admin.describeTopics(there).allTopicNames())
            for name in there:
                count = described.get(name).partitions().size()
                if count < partitions[name]:
                    raise KappaShopError(
                        f"topic {name} at {bootstrap_servers} has {count} partition(s); the log "
                        f"has records for {partitions[name]}: add partitions to it "
                        "(kafka-topics --alter --partitions), or produce to other topics "
                        "(--topic-prefix). Nothing was sent"
                    )
        missing = [name for name in partitions if name not in present]
        if missing:
            new_topics = jvm.java.util.ArrayList()
            for name in missing:
                new_topics.add(
                    jvm.org.apache.kafka.clients.admin.NewTopic(
                        name,
                        jvm.java.util.Optional.of(partitions[name]),
                        jvm.java.util.Optional.empty(),  # the brokers' replication factor
                    )
                )
            _wait(spark, admin.createTopics(new_topics).all())
    return missing


def delete_topics(
    spark: Any, bootstrap_servers: str, names: list[str], options: dict[str, str] | None = None
) -> None:
    """Delete the named topics (a proof's own, when it is done)."""
    with kafka_admin(spark, bootstrap_servers, options) as admin:
        present = set(_wait(spark, admin.listTopics().names()))
        gone = [name for name in names if name in present]
        if gone:
            _wait(spark, admin.deleteTopics(gone).all())


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
