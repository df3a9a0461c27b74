"""`kappa-shop kafka up|status|down`: a real Apache Kafka broker (KRaft, one JVM) from Maven
Central's jars, in a copy of the project on ports of its own: it answers Kafka's protocol on
127.0.0.1 only, `up` again changes nothing, `down` leaves no process and no port; a taken port
and jars that cannot be fetched each stop `up` with one line.

(The jars are fetched once into ~/.cache/kappa-shop/, as for a user; the first run here takes
a minute longer.)"""

from __future__ import annotations

import json
import re
import socket
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import copy_project, free_ports, listening_addresses, run_in
from log_oracle import defect, landed_lines

from kappa_shop.cluster import process_alive
from kappa_shop.generator import GeneratorConfig, generate
from kappa_shop.kafka import answers

pytestmark = pytest.mark.spark  # (a JVM of its own, as long as a Spark test's)


def _kafka(root: Path, port: int, *arguments: str, **settings: str):
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "kafka", *arguments]
    return run_in(root, command, timeout=300, KAPPA_SHOP_KAFKA_PORT=str(port), **settings)


def _pid(root: Path) -> int | None:
    import json

    state = root / ".kafka" / "kafka.json"
    return json.loads(state.read_text())["pid"] if state.is_file() else None


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
PRODUCED_LOG = GeneratorConfig(
    seed=21,
    events=700,
    days=1.0,
    batches=3,
    late_fraction=0.1,
    duplicate_fraction=0.05,
    conflict_fraction=0.02,
    malformed_fraction=0.05,
)
# reads every record of the log's topics back from the broker, as Kafka's consumers see them
READ_BACK = r"""
import json, sys
from kappa_shop.log_format import TOPICS
from kappa_shop.produce import kafka_spark
spark = kafka_spark("read_back")
frame = (
    spark.read.format("kafka")
    .option("kafka.bootstrap.servers", sys.argv[1])
    .option("subscribe", ",".join(topic.name for topic in TOPICS))
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
    command = [sys.executable, "-m", "kappa_shop", "--project-dir", str(root), "produce"]
    return run_in(root, [*command, *arguments], timeout=600, KAPPA_SHOP_KAFKA_PORT=str(port))


def test_a_produced_log_holds_every_record_at_its_offset_once(broker, tmp_path):
    root, port = broker
    log = tmp_path / "log"
    generate(PRODUCED_LOG, log, progress=lambda message: None)

    first = _produce(root, port, "--log", str(log), "--batches", "1-2")
    assert first.returncode == 0, first.stdout + first.stderr
    # again, with the rest: batches 1 and 2 are not sent twice
    again = _produce(root, port, "--log", str(log), "--all")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "  batch 1:" not in again.stdout and "  batch 2:" not in again.stdout
    assert "  batch 3:" in again.stdout  # (and the stragglers' batch 4, if it holds records)
    assert re.search(r"; [1-9]\d* partition file\(s\) were already there", again.stdout)

    out = tmp_path / "read.jsonl"
    read = run_in(
        root, [sys.executable, "-c", READ_BACK, f"127.0.0.1:{port}", str(out)], timeout=600
    )
    assert read.returncode == 0, read.stderr[-3000:]
    found = [json.loads(line) for line in out.read_text().splitlines()]
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
