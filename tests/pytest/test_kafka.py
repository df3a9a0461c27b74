"""`kappa-shop kafka up|status|down`: a real Apache Kafka broker (KRaft, one JVM) from Maven
Central's jars, in a copy of the project on ports of its own: it answers Kafka's protocol on
127.0.0.1 only, `up` again changes nothing, `down` leaves no process and no port; a taken port
and jars that cannot be fetched each stop `up` with one line. On it: a generated log produced
(`kappa-shop produce`, to topics under a prefix) and read back; ingested (`kappa-shop ingest
--kafka`) with a SIGKILL inside a batch and run again, each record in its raw table once; its
deliveries staged as an independent classification of the same log says; hostile values (a
byte-order mark, NUL, NaN, a key twice, deep nesting, a cut-off or empty value, a tombstone,
...) each accepted or quarantined with its reason; the proof
from Kafka (what `kappa-shop verify --kafka` runs, in this process's Spark) from topics of its
own; a missing topic, offsets the broker no
longer has and no broker at all, one line each.

(The jars are fetched once into ~/.cache/kappa-shop/, as for a user; the first run here takes
a minute longer.)"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import (
    IMPERFECT_LOG,
    SMALL_PROOF,
    TRACED_PATHS,
    copy_project,
    free_ports,
    kill_inside_batch,
    listening_addresses,
    run_in,
    subprocess_environment,
)
from log_oracle import classify, defect, landed_lines

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import KafkaSource, check_topics
from kappa_shop.ingest.lag import kafka_lag
from kappa_shop.log.format import TOPICS
from kappa_shop.log.generator import generate
from kappa_shop.log.landing import deliver
from kappa_shop.log.produce import produce
from kappa_shop.ops.broker import jar_directory
from kappa_shop.ops.chaos_worker import compare_counts, landed_records, raw_records
from kappa_shop.proof.verify import format_report, verify
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.kafka import answers
from kappa_shop.runtime.processes import process_alive
from kappa_shop.serving import live

pytestmark = pytest.mark.spark  # (a JVM of its own, as long as a Spark test's)


def _kafka(root: Path, port: int, *arguments: str, **settings: str):
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "kafka", *arguments]
    return run_in(root, command, timeout=300, KAPPA_SHOP_KAFKA_PORT=str(port), **settings)


def _pid(root: Path) -> int | None:
    import json

    state = root / ".kafka" / "kafka.json"
    return json.loads(state.read_text())["pid"] if state.is_file() else None


def _ingest_command(root: Path, *arguments: str) -> list[str]:
    return [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "ingest", "--kafka",
            *arguments]  # fmt: skip


def _ingest_produced(root: Path, *arguments: str) -> list[str]:
    """Ingesting the produced log (its topics are under PREFIX)."""
    return _ingest_command(root, "--topic-prefix", PREFIX, *arguments)


def _error_line(result) -> str:
    """The one line a failed command says why in, after Spark started (Java prints its own
    start-up warning before it): the last line, the only one of kappa-shop, no traceback."""
    lines = result.stderr.strip().splitlines()
    ours = [line for line in lines if line.startswith("kappa-shop:")]
    assert result.returncode == 1 and ours == lines[-1:], result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return ours[0]


def _settings(port: int, schema: str = "from_kafka") -> dict[str, str]:
    return {"KAPPA_SHOP_KAFKA_PORT": str(port), "KAPPA_SHOP_SCHEMA": schema,
            "PYTHONUNBUFFERED": "1"}  # fmt: skip


def _ingest_environment(root: Path, port: int) -> dict[str, str]:
    return subprocess_environment(root, **_settings(port))


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Iterator[tuple[Path, int]]:
    root = copy_project(tmp_path_factory.mktemp("kafka") / "kappa_shop")
    port = free_ports(2)
    try:
        yield root, port
    finally:
        _kafka(root, port, "down")


def test_up_starts_a_broker_on_loopback_that_answers_and_up_again_changes_nothing(broker):
    root, port = broker
    first = _kafka(root, port, "up")
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"up: 127.0.0.1:{port}" in first.stdout
    pid = _pid(root)
    assert pid and process_alive(pid)
    assert answers(port)  # Kafka's own protocol: an ApiVersions request answered
    # the broker and its controller, on 127.0.0.1 and nowhere else (Java's sockets are IPv6
    # ones, bound to the IPv4-mapped form of the address)
    addresses = {address.removeprefix("::ffff:") for address in listening_addresses([pid])}
    assert addresses == {"127.0.0.1"}
    assert (root / ".kafka" / "data" / "meta.properties").is_file()  # formatted (KRaft)

    again = _kafka(root, port, "up")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already running" in again.stdout and "nothing started" in again.stdout
    assert _pid(root) == pid

    status = _kafka(root, port, "status")
    assert status.returncode == 0 and "running" in status.stdout, status.stdout


def test_ingesting_from_a_broker_without_the_log_s_topics_is_one_line(broker):
    # (before the log is produced: the broker has no topic yet)
    root, port = broker
    result = run_in(root, _ingest_command(root), timeout=600, **_settings(port, schema="no_topics"))
    assert _error_line(result) == (
        f"kappa-shop: error: Kafka at 127.0.0.1:{port} has no topic "
        + ", ".join(topic.name for topic in TOPICS)
        + ": every stream of the log (var log_streams) is read from its topic; produce to it "
        "(`kappa-shop produce`) or create it. Nothing was ingested"
    )
    assert not (root / "spark-warehouse" / "no_topics_raw.db" / "raw_ingestion_batches").exists()


def test_no_broker_answering_a_client_with_settings_is_one_line(spark):
    # with client settings (TLS, SASL: here only timeouts) the protocol probe is left out, so
    # a broker that does not answer is the admin client giving up, said in one line (as a
    # broker gone between the probe and the listing is, in the live service's cycle)
    port = free_ports(1)
    source = KafkaSource(
        f"127.0.0.1:{port}", {"default.api.timeout.ms": "2000", "request.timeout.ms": "1000"}
    )
    with pytest.raises(KappaShopError) as raised:
        check_topics(spark, source)
    said = str(raised.value)
    assert said.startswith(f"Kafka at 127.0.0.1:{port} did not answer: "), said
    assert "TimeoutException" in said and "\n" not in said, said


def test_a_taken_port_is_refused_in_one_line(tmp_path):
    other = copy_project(tmp_path / "kappa_shop")
    taken = free_ports(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        result = _kafka(other, taken, "up")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {taken} (broker) on 127.0.0.1 is taken by another process" in lines[0]
    assert _pid(other) is None  # nothing started


def test_jars_that_cannot_be_fetched_are_one_line(tmp_path):
    root = copy_project(tmp_path / "kappa_shop")
    result = _kafka(
        root, free_ports(2), "up",
        XDG_CACHE_HOME=str(tmp_path / "empty-cache"),
        KAPPA_SHOP_MAVEN_REPOSITORY="http://127.0.0.1:9/maven2",  # nothing listens there
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kappa-shop: error: cannot fetch Apache Kafka 4.1.1 from "), lines
    assert "KAPPA_SHOP_MAVEN_REPOSITORY" in lines[0]


# a log with every imperfection, more of each than the generator's defaults
PRODUCED_LOG = IMPERFECT_LOG
# the log is produced under a prefix, as to a shared cluster's namespace: shop.order_events, ...
PREFIX = "shop."
# reads every record of the log's topics back from the broker, as Kafka's consumers see them
READ_BACK = r"""
import json, sys
from kappa_shop.log.format import TOPICS
from kappa_shop.runtime.kafka import kafka_spark
spark = kafka_spark("read_back")
frame = (
    spark.read.format("kafka")
    .option("kafka.bootstrap.servers", sys.argv[1])
    .option("subscribe", ",".join(sys.argv[3] + topic.name for topic in TOPICS))
    .load()
)
with open(sys.argv[2], "w") as out:
    for row in frame.collect():
        out.write(json.dumps({
            "topic": row["topic"], "partition": row["partition"], "offset": row["offset"],
            "key": None if row["key"] is None else bytes(row["key"]).decode(),
            "value": bytes(row["value"]).decode(),
        }) + "\n")
"""


def _produce(root: Path, port: int, *arguments: str):
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "produce",
               "--topic-prefix", PREFIX]  # fmt: skip
    return run_in(root, [*command, *arguments], timeout=600, KAPPA_SHOP_KAFKA_PORT=str(port))


@pytest.fixture(scope="module")
def produced(broker, tmp_path_factory):
    """PRODUCED_LOG generated and produced to the broker in two calls (batches 1-2, then all),
    to topics under PREFIX."""
    root, port = broker
    if _pid(root) is None:
        pytest.fail("the broker of the first test is not running")
    log = tmp_path_factory.mktemp("produced") / "log"
    generate(PRODUCED_LOG, log, progress=lambda message: None)
    first = _produce(root, port, "--log", str(log), "--batches", "1-2")
    again = _produce(root, port, "--log", str(log), "--all")
    return log, first, again


def test_a_produced_log_holds_every_record_at_its_offset_once(broker, produced, tmp_path):
    root, port = broker
    log, first, again = produced
    assert first.returncode == 0, first.stdout + first.stderr
    # again, with the rest: batches 1 and 2 are not sent twice
    assert again.returncode == 0, again.stdout + again.stderr
    assert "  batch 1:" not in again.stdout and "  batch 2:" not in again.stdout
    assert "  batch 3:" in again.stdout  # (and the stragglers' batch 4, if it holds records)
    assert re.search(r"; [1-9]\d* partition file\(s\) were already there", again.stdout)

    out = tmp_path / "read.jsonl"
    read = run_in(
        root, [sys.executable, "-c", READ_BACK, f"127.0.0.1:{port}", str(out), PREFIX], timeout=600
    )
    assert read.returncode == 0, read.stderr[-3000:]
    found = [json.loads(line) for line in out.read_text().splitlines()]
    assert {record["topic"] for record in found} == {PREFIX + topic.name for topic in TOPICS}
    for record in found:
        record["topic"] = record["topic"].removeprefix(PREFIX)  # the stream
    by_place = {(r["topic"], r["partition"], r["offset"]): r for r in found}
    assert len(by_place) == len(found)  # no offset twice

    lines = list(landed_lines(log))
    assert len(found) == len(lines)  # every landed line once, nothing else
    kinds: Counter = Counter()
    lines_before: Counter = Counter()  # of the same landing file: its offset is the first's + this
    for line in lines:
        landing_file = (line.topic, line.partition, line.file_first_offset)
        offset = line.file_first_offset + lines_before[landing_file]
        lines_before[landing_file] += 1
        record = by_place[(line.topic, line.partition, offset)]
        kind, parsed = defect(line)
        kinds[kind] += 1
        if isinstance(parsed, dict):
            # the event as its producer wrote it: the broker's fields are the record's own
            assert record["key"] == parsed.get("key"), (line.text, record)
            assert json.loads(record["value"]) == {
                name: value for name, value in parsed.items()
                if name not in ("topic", "partition", "offset", "key")
            }  # fmt: skip
            assert (parsed["topic"], parsed["partition"], parsed["offset"]) == (
                record["topic"], record["partition"], record["offset"]
            )  # fmt: skip
        else:
            assert record["value"] == line.text and record["key"] is None
    # the imperfections made it through: malformed values, redeliveries and all
    manifest = json.loads((log / "manifest.json").read_text())
    assert kinds["not_json"] > 0 and kinds["null_key"] > 0, kinds
    assert sum(manifest["totals"]["malformed"].values()) == sum(
        count for kind, count in kinds.items() if kind != "ok"
    ), (kinds, manifest["totals"]["malformed"])


KAFKA_SCHEMA = "from_kafka"


# one record more, from a producer that wrote Latin-1, not UTF-8: its value's bytes are not
# UTF-8 (with Kafka's own producer, in jshell, after the log was produced and read back; a
# statement a line, as jshell reads them)
NOT_UTF8 = {"topic": "search_clicks", "partition": 0, "key": "u-not-utf8"}
SEND_NOT_UTF8 = f"""
import org.apache.kafka.clients.producer.*;
var settings = new java.util.Properties();
settings.put("bootstrap.servers", System.getenv("KAFKA_SERVERS"));
settings.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
settings.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
var producer = new KafkaProducer<String, byte[]>(settings);
var latin1 = java.nio.charset.StandardCharsets.ISO_8859_1;
var value = "{{\\"event_id\\": \\"e-not-utf8\\", \\"note\\": \\"caf\\u00e9\\"}}".getBytes(latin1);
producer.send(new ProducerRecord<>("shop.{NOT_UTF8["topic"]}", {NOT_UTF8["partition"]},
    "{NOT_UTF8["key"]}", value)).get();
producer.close();
System.out.println("sent " + value.length + " bytes");
/exit
"""


def _event(number: int, extra: str = "") -> bytes:
    """A valid page view as its producer writes a record's value (event id h-<number>), `extra`
    added to its payload as JSON text."""
    return (
        f'{{"event_id":"h-{number}","event_type":"page_view","event_time":"2024-03-01T10:00:00Z",'
        f'"schema_version":1,"payload":{{"user_id":"u-1","page_path":"/"{extra}}}}}'
    ).encode()


# hostile values, a record each to web_events partition 0 (key u-hostile), in this order: the
# value's bytes (None: a tombstone, a record without a value) and the staged row's expected
# (event_id, invalid_reason) (reason None: accepted). As test_quarantine's HOSTILE for landed
# files, where a Kafka record can carry it: a record has no lines to end or cut, and one over a
# megabyte (max.message.bytes) never reaches the log (the producer refuses it), so the oversize
# record is one over the staging limit (var max_record_bytes). A byte-order mark differs from a
# file's: the file's line reader drops one at a file's start (as Hadoop's does), while a
# value that starts with one is not JSON text (RFC 8259: senders must not add one; a parser
# may refuse it): quarantined, kept as it came.
HOSTILE_VALUES = {
    "bom": (b"\xef\xbb\xbf" + _event(0), (None, "not_json")),
    "crlf": (_event(1) + b"\r\n", ("h-1", None)),
    "nul": (_event(2, ', "note": "a\x00b"'), (None, "not_json")),
    "nan": (_event(3, ', "score": NaN'), (None, "not_json")),
    "infinity": (_event(4, ', "score": -Infinity'), (None, "not_json")),
    "duplicate_key": (_event(5, ', "user_id": "u-2"'), (None, "not_json")),
    "deep": (_event(6, ', "tree": ' + "[" * 5_000 + "]" * 5_000), (None, "not_json")),
    "big_number": (_event(7, ', "huge": 123456789012345678901234567890123456789012'),
                   ("h-7", None)),
    "oversize": (_event(8, ', "pad": "' + "x" * 20_000 + '"'), ("h-8", "oversize_record")),
    "cut": (_event(9)[:70], (None, "not_json")),
    "empty": (b"", (None, "not_json")),
    "tombstone": (None, (None, "not_json")),
}  # fmt: skip
# (jshell reads a statement a line: the loop is one line, written here in parts)
SEND_HOSTILE = "\n".join([
    "import org.apache.kafka.clients.producer.*;",
    "var settings = new java.util.Properties();",
    'settings.put("bootstrap.servers", System.getenv("KAFKA_SERVERS"));',
    'settings.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");',
    'settings.put("value.serializer", '
    '"org.apache.kafka.common.serialization.ByteArraySerializer");',
    "var producer = new KafkaProducer<String, byte[]>(settings);",
    'var directory = java.nio.file.Path.of(System.getenv("HOSTILE_DIR"));',
    "var files = java.nio.file.Files.list(directory).sorted().toList();",
    "for (var file : files) { var name = file.getFileName().toString(); "
    'byte[] value = name.endsWith(".none") ? null : java.nio.file.Files.readAllBytes(file); '
    'var sent = producer.send(new ProducerRecord<>("shop.web_events", 0, "u-hostile", value))'
    '.get(); System.out.println("sent " + name + " at offset " + sent.offset()); }',
    "producer.close();",
    "/exit",
    "",
])  # fmt: skip


@pytest.fixture(scope="module")
def ingested_from_kafka(broker, produced, tmp_path_factory, spark):
    """The produced log, one record whose value is not UTF-8 (NOT_UTF8) and the hostile values
    (HOSTILE_VALUES) ingested from Kafka in batches of 200 records, the run killed with SIGKILL
    inside its third batch (after a raw table, before the receipt), then run again; and the
    deliveries models and their outcomes built on the raw tables. Returns the two runs' output,
    the offset of each hostile value, and the log's lag before ingestion (kappa_shop.ingest.lag)
    after the kill and after the second run, with the records the receipts counted then."""
    root, port = broker
    sent = _jshell(port, tmp_path_factory.mktemp("not-utf8") / "send.jsh", SEND_NOT_UTF8)
    assert "sent " in sent.stdout, sent.stdout + sent.stderr[-3000:]
    hostile_dir = tmp_path_factory.mktemp("hostile")
    for number, (name, (value, _)) in enumerate(HOSTILE_VALUES.items()):
        (hostile_dir / f"{number:02d}-{name}.{'none' if value is None else 'bin'}").write_bytes(
            value or b""
        )
    sent = _jshell(
        port, hostile_dir.parent / "send-hostile.jsh", SEND_HOSTILE, HOSTILE_DIR=str(hostile_dir)
    )
    offsets = {
        name: int(offset)
        for name, offset in re.findall(r"sent \d+-(\w+)\.\w+ at offset (\d+)", sent.stdout)
    }
    assert sorted(offsets) == sorted(HOSTILE_VALUES), sent.stdout + sent.stderr[-3000:]
    raw_dir = root / "spark-warehouse" / f"{KAFKA_SCHEMA}_raw.db"
    seen = kill_inside_batch(
        _ingest_produced(root, "--max-files-per-batch", "200", "--pause-between-writes", "1"),
        root,
        _ingest_environment(root, port),
        raw_dir,
    )
    source = KafkaSource(bootstrap_servers=f"127.0.0.1:{port}", topic_prefix=PREFIX)
    query = root / "spark-warehouse" / "_checkpoints" / f"{KAFKA_SCHEMA}_raw" / "ingest" / "query"

    def receipted() -> int:
        rows = spark.read.parquet(str(raw_dir / "raw_ingestion_batches")).collect()
        return sum(row["landed_record_count"] for row in rows)

    lags = [(kafka_lag(spark, source, query), receipted())]

    again = subprocess.run(
        _ingest_produced(root), cwd=root, env=_ingest_environment(root, port),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    lags.append((kafka_lag(spark, source, query), receipted()))
    staged = run_in(
        root,
        [str(Path(sys.executable).parent / "dbt"), "run", "--select", "+stg_log__delivery_outcomes",
         "--vars", json.dumps({"raw_schema": f"{KAFKA_SCHEMA}_raw"}),
         "--project-dir", str(root), "--profiles-dir", str(root)],
        timeout=900,
        KAPPA_SHOP_SCHEMA=KAFKA_SCHEMA,
    )  # fmt: skip
    assert staged.returncode == 0, staged.stdout[-4000:]
    return seen, again.stdout, offsets, lags


def test_ingesting_from_kafka_killed_inside_a_batch_then_again_holds_each_record_once(
    broker, produced, ingested_from_kafka, spark
):
    root, _ = broker
    log, _, _ = produced
    _, again, _, _ = ingested_from_kafka
    assert "ingestion batch 3:" in again  # the interrupted batch, replayed
    produced_per_topic = Counter(line.topic for line in landed_lines(log))
    produced_per_topic[NOT_UTF8["topic"]] += 1
    produced_per_topic["web_events"] += len(HOSTILE_VALUES)
    raw_dir = root / "spark-warehouse" / f"{KAFKA_SCHEMA}_raw.db"
    for topic in TOPICS:
        rows = spark.read.parquet(str(raw_dir / topic.raw_table))
        records = rows.selectExpr(
            "get_json_object(raw_record, '$.topic') as topic",
            "cast(get_json_object(raw_record, '$.partition') as int) as partition",
            "cast(get_json_object(raw_record, '$.offset') as bigint) as offset",
        )
        total = records.count()
        distinct = records.distinct().count()
        # every record the broker holds for the topic, once: topic, partition and offset are
        # the broker's
        assert total == distinct == produced_per_topic[topic.name], topic.name
        assert records.where(f"topic != '{PREFIX}{topic.name}'").count() == 0
    receipts = spark.read.parquet(str(raw_dir / "raw_ingestion_batches")).collect()
    numbers = sorted(row["ingestion_batch_id"] for row in receipts)
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 4
    assert sum(row["landed_record_count"] for row in receipts) == sum(produced_per_topic.values())


def test_the_lag_before_ingestion_counts_what_no_committed_batch_took(
    broker, produced, ingested_from_kafka
):
    # from the brokers' latest offsets and the checkpoint's last committed batch: after the
    # kill inside batch 3 (before its receipt), every record but the two receipted batches';
    # after the second run, none
    log, _, _ = produced
    (after_kill, receipted_then), (after_again, receipted_at_end) = ingested_from_kafka[3]
    on_the_topics = sum(1 for _ in landed_lines(log)) + 1 + len(HOSTILE_VALUES)  # (+ NOT_UTF8)
    assert receipted_at_end == on_the_topics
    assert 0 < receipted_then < on_the_topics
    assert after_kill.records == on_the_topics - receipted_then
    assert after_kill.files is None and after_kill.oldest is None
    assert after_again.records == 0 and after_again.describe(0.0) == "none"


def test_records_from_kafka_are_staged_as_their_landed_lines_are(
    broker, produced, ingested_from_kafka, spark
):
    # the outcome of every record (accepted, duplicate, conflicting, quarantined and why), by
    # staging from the broker's records, equals an independent classification of the landed
    # lines of the same log; and each staged event lies where the broker put it
    root, _ = broker
    log, _, _ = produced
    lines = list(landed_lines(log))
    expected: Counter = Counter()
    for topic, counts in classify(lines).counts.items():
        for kind, count in counts.items():
            outcome = {"valid": "accepted", "duplicate": "duplicate"}.get(kind)
            outcome = outcome or ("conflicting_duplicate" if kind == "conflicting_duplicate"
                                  else "malformed")  # fmt: skip
            reason = kind if kind not in ("valid", "duplicate") else "none"
            expected[(topic, outcome, reason)] += count
    expected[(NOT_UTF8["topic"], "malformed", "invalid_utf8")] += 1  # the record of Latin-1
    for _, (_, reason) in HOSTILE_VALUES.values():
        expected[("web_events", "malformed" if reason else "accepted", reason or "none")] += 1
    outcomes = spark.read.parquet(
        str(root / "spark-warehouse" / f"{KAFKA_SCHEMA}.db" / "stg_log__delivery_outcomes")
    )
    reported: Counter = Counter()
    for row in outcomes.collect():
        reported[(row["topic"], row["outcome"], row["quarantine_reason"])] += row["deliveries"]
    assert +reported == +expected
    assert sum(reported.values()) == len(lines) + 1 + len(HOSTILE_VALUES)

    landed_at = {}
    before: Counter = Counter()
    for line in lines:
        landing_file = (line.topic, line.partition, line.file_first_offset)
        landed_at[(line.topic, line.partition, line.file_first_offset + before[landing_file])] = (
            line.text
        )
        before[landing_file] += 1
    staged = spark.read.parquet(
        str(root / "spark-warehouse" / f"{KAFKA_SCHEMA}.db" / "stg_orders__order_event_deliveries")
    ).collect()
    assert staged
    for row in staged:
        text = landed_at[("order_events", row["log_partition"], row["log_offset"])]
        if row["event_id"] is not None:
            assert json.loads(text)["event_id"] == row["event_id"]


def test_hostile_values_from_kafka_are_quarantined_with_a_reason_or_accepted(
    broker, ingested_from_kafka, spark
):
    # each hostile value is one staged row at the offset the broker gave it: accepted (its event
    # id), or quarantined with its reason; nothing dropped, nothing crashed
    root, _ = broker
    _, _, offsets, _ = ingested_from_kafka
    staged = spark.read.parquet(
        str(root / "spark-warehouse" / f"{KAFKA_SCHEMA}.db" / "stg_web__event_deliveries")
    ).where("log_partition = 0 and partition_key = 'u-hostile'")
    rows = {row["log_offset"]: row for row in staged.collect()}
    for name, (_, expected) in HOSTILE_VALUES.items():
        row = rows[offsets[name]]
        assert (row["event_id"], row["invalid_reason"]) == expected, name
        assert row["outcome"] == ("malformed" if expected[1] else "accepted"), name
    assert len(rows) == len(HOSTILE_VALUES)


# more records to shop.web_events partition 0, then every record of it deleted up to its end, as
# a topic's retention would: with Kafka's own clients (the broker's jars), in the JDK's jshell
DELETE_RECORDS = """
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
var settings = new java.util.Properties();
settings.put("bootstrap.servers", System.getenv("KAFKA_SERVERS"));
settings.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
settings.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
var producer = new KafkaProducer<String, String>(settings);
for (int n = 0; n < 5; n++)
    producer.send(new ProducerRecord<>("shop.web_events", 0, null, "not kept " + n)).get();
producer.close();
var admin = Admin.create(settings);
var partition = new TopicPartition("shop.web_events", 0);
var latest = admin.listOffsets(java.util.Map.of(partition, OffsetSpec.latest()));
long end = latest.partitionResult(partition).get().offset();
admin.deleteRecords(java.util.Map.of(partition, RecordsToDelete.beforeOffset(end))).all().get();
admin.close();
System.out.println("deleted shop.web_events-0 up to offset " + end);
/exit
"""


def _jshell(port: int, script: Path, text: str, **environment: str) -> subprocess.CompletedProcess:
    """`text` run in the JDK's jshell with the broker's jars (Kafka's clients), `environment`
    added to its environment."""
    script.write_text(text)
    classpath = ":".join(str(jar) for jar in sorted(jar_directory().glob("*.jar")))
    return subprocess.run(
        ["jshell", "--class-path", classpath, str(script)],
        env={**os.environ, "KAFKA_SERVERS": f"127.0.0.1:{port}", **environment},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_offsets_the_broker_no_longer_has_stop_ingestion_in_one_line(
    broker, ingested_from_kafka, tmp_path
):
    root, port = broker
    deleted = _jshell(port, tmp_path / "delete_records.jsh", DELETE_RECORDS)
    assert "deleted shop.web_events-0 up to offset" in deleted.stdout, deleted.stderr[-3000:]
    raw_dir = root / "spark-warehouse" / f"{KAFKA_SCHEMA}_raw.db"
    receipts_before = len(list((raw_dir / "raw_ingestion_batches").glob("*=*")))

    result = run_in(root, _ingest_produced(root), timeout=600, **_settings(port))
    line = _error_line(result)
    assert line.startswith(
        f"kappa-shop: error: the checkpoint of {KAFKA_SCHEMA}_raw needs records that Kafka at "
        f"127.0.0.1:{port} no longer has (deleted by the topic's retention"
    ), line
    # which records: those after what was ingested of shop.web_events partition 0
    lost = r"Could not read records in offset \[\d+, \d+\) for topic partition shop\.web_events-0"
    assert re.search(rf"no longer has \(.*\): {lost}\. Ingestion stopped there", line), line
    assert len(list((raw_dir / "raw_ingestion_batches").glob("*=*"))) == receipts_before


# the broker's topics, with Kafka's own admin client in jshell, a line each
LIST_TOPICS = """
var settings = new java.util.Properties();
settings.put("bootstrap.servers", System.getenv("KAFKA_SERVERS"));
var admin = org.apache.kafka.clients.admin.Admin.create(settings);
for (var name : admin.listTopics().names().get()) System.out.println("topic " + name);
admin.close();
/exit
"""


def _topics(port: int, script: Path) -> set[str]:
    """The topics the broker has."""
    listed = _jshell(port, script, LIST_TOPICS)
    assert listed.returncode == 0, listed.stderr[-2000:]
    return {
        line.removeprefix("topic ")
        for line in listed.stdout.split("\n")
        if line.startswith("topic ")
    }


def test_the_proof_from_kafka_passes(broker, spark, project_copy, tmp_path):
    # the proof, its log produced round by round (out of order, a batch sent twice, the reach
    # edges) to topics of its own and ingested from them: incremental = full refresh. In this
    # process, on its warm Spark (started with the Kafka connector), as `kappa-shop verify
    # --kafka` runs it; schemas of its own (the Delta proof of the same seed keeps verify_*)
    _, port = broker
    # (no round built twice, no replay: those builds are parquet's writes, which
    # test_verify's proof repeats; what this one adds is the log from Kafka)
    proof = replace(
        SMALL_PROOF,
        schema_prefix="kafka_proof",
        kafka=KafkaSource(bootstrap_servers=f"127.0.0.1:{port}"),
        repeats=False,
    )
    project = DbtProject(root=project_copy, target="local", profiles_dir=project_copy)
    printed: list[str] = []
    report = verify(project, proof, tmp_path / "verify", progress=printed.append)
    shown = "\n".join(printed) + format_report(report)
    assert report.passed, shown[-5000:]
    topics = re.search(rf"from Kafka at 127\.0\.0\.1:{port}, topics (\S+)\*", shown)
    assert topics and topics[1].startswith(f"kafka_proof_{proof.seed}_"), shown[:2000]
    rounds = re.findall(r"round \d+/\d+: (\d+) records produced, ingestion batch", shown)
    assert len(rounds) >= 4 and all(int(count) > 0 for count in rounds), shown
    assert "no round built twice, no replay (--no-repeats)" in shown
    # 6 rounds and the full refresh: no round built again, no replay
    labels = [label for label, _ in report.data_tests_run]
    assert labels == [f"round {number}" for number in range(1, 7)] + ["full refresh"], labels
    assert sorted(diff.model for diff in report.diffs) == TRACED_PATHS
    assert (
        f"Proof PASSED (seed {proof.seed}): {len(TRACED_PATHS)} of "
        f"{len(TRACED_PATHS)} models equal their full refresh"
    ) in shown
    tests_run = dict(report.data_tests_run)
    assert tests_run["full refresh"] > 0  # the data tests ran, and passed (PASSED)
    # the proof's own topics are gone; the produced log's are still there
    left = _topics(port, tmp_path / "list_topics.jsh")
    assert not [topic for topic in left if topic.startswith(topics[1])], left
    assert {PREFIX + topic.name for topic in TOPICS} <= left


def test_the_live_service_waits_for_a_broker_that_went_away_and_goes_on(
    broker, spark, project_copy, tmp_path, monkeypatch
):
    # `kappa-shop live` from Kafka, in this process, on the suite's Spark: a batch produced and
    # built; the broker stopped (`kappa-shop kafka down`) after that cycle: the next cycle says
    # so in one line, the ones after it fail in silence; started again (`up`, its data kept)
    # a few seconds later: the service says it goes on, and takes a second batch produced
    # then. Every produced record is in its raw table once; the service's records hold each
    # cycle once and each ingestion batch once.
    root, port = broker
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", "live_kafka")
    project = DbtProject(root=project_copy, target="local", profiles_dir=project_copy)
    warehouse = project.warehouse()
    for row in warehouse.sql("show schemas like 'live_kafka*'"):
        warehouse.sql(f"drop schema {row['namespace']} cascade")
    log, landing = tmp_path / "log", tmp_path / "landing"
    generate(replace(PRODUCED_LOG, events=300, batches=2), log, progress=lambda message: None)
    source = KafkaSource(bootstrap_servers=f"127.0.0.1:{port}", topic_prefix="live_restart.")

    def produce_batch(batch: int) -> None:
        deliver(log, landing, [batch])  # (what was produced, for the count)
        produce(spark, log, [batch], source.bootstrap_servers, progress=lambda message: None,
                topic_prefix=source.topic_prefix)  # fmt: skip

    said: list[str] = []
    built: list[str] = []
    stop = live.StopRequest()
    up_again: list[subprocess.CompletedProcess] = []
    restarted = threading.Thread(
        target=lambda: (time.sleep(6), up_again.append(_kafka(root, port, "up")))
    )

    def say(line: str) -> None:
        said.append(line)
        if re.match(r"live: cycle \d+ .*batch\(es\)", line):
            built.append(line)
            if len(built) == 1:
                assert _kafka(root, port, "down").returncode == 0
                restarted.start()
            else:
                stop.event.set()
        elif line.startswith("live: up to date") and restarted.ident and not restarted.is_alive():
            produce_batch(2)  # (the broker back, the service idle: the next batch)

    produce_batch(1)
    try:  # (at most 120 cycles, a second apart, should the broker not come back)
        live.run_live(project, source, every=1, cycles=120, tests_every=0,
                      select=("+stg_orders__order_events",), say=say, stop=stop)  # fmt: skip
    finally:
        if restarted.ident:
            restarted.join()
        if not answers(port):
            _kafka(root, port, "up")  # (the module's later tests need it)
    shown = "\n".join(said)
    assert up_again and up_again[0].returncode == 0, up_again and up_again[0].stderr[-2000:]
    assert stop.event.is_set() and len(built) == 2, shown
    failed = [line for line in said if "failed:" in line]
    assert len(failed) == 1, shown
    assert f"failed: no Kafka broker answers at 127.0.0.1:{port}" in failed[0], shown
    going_on = [line for line in said if line.startswith("live: going on after ")]
    assert len(going_on) == 1 and "no Kafka broker answers" in going_on[0], shown
    # the broker was away for several cycles (one every second), said once
    assert int(re.search(r"after (\d+) failed", going_on[0])[1]) >= 3, shown
    assert said.index(failed[0]) < said.index(going_on[0]), shown
    assert re.search(r"cycle \d+ .*: 1 batch\(es\) 2\.\.2, ", shown), shown
    assert compare_counts(
        landed_records(landing, kafka=True), raw_records(warehouse, project.raw_schema, kafka=True)
    ) == ("exactly once", [])
    assert live.check_records(project) == []


def test_producing_without_a_broker_is_one_line(tmp_path):
    log = tmp_path / "log"
    generate(PRODUCED_LOG, log, progress=lambda message: None)
    root = copy_project(tmp_path / "kappa_shop")
    nobody = free_ports(1)
    result = _produce(root, nobody, "--log", str(log), "--all")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0] == (
        f"kappa-shop: error: no Kafka broker answers at 127.0.0.1:{nobody}: start one "
        "(`kappa-shop kafka up`) or name yours with --bootstrap-servers. Nothing was sent"
    )


def test_down_leaves_no_process_and_no_port(broker):
    root, port = broker
    pid = _pid(root)
    assert pid and process_alive(pid)  # (started by the first test)
    result = _kafka(root, port, "down")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not process_alive(pid)
    assert not answers(port)
    for taken in (port, port + 1):
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", taken)) != 0, taken
    status = _kafka(root, port, "status")
    assert status.returncode == 1 and "stopped" in status.stdout
    assert "No Kafka broker was running" in _kafka(root, port, "down").stdout
