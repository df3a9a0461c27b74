"""The log's lag before ingestion: the records the log holds that no committed ingestion batch
has taken yet (what `kappa-shop live` has still to ingest).

Read from ingestion's own checkpoint, the same that makes ingestion exactly once: its last
committed batch (`commits/<n>`) and that batch's offsets (`offsets/<n>`). From a landing zone,
the files landed under `topics/` that the file source's log (`sources/0`) does not assign to a
committed batch, their lines counted; from Kafka, each partition's latest offset on the brokers
less the committed batch's end offset (the earliest offset where no batch committed yet).
Nothing is read through Spark but Kafka's admin client."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kappa_shop.ingest.ingestion import KafkaSource
from kappa_shop.ingest.landed_files import local_path


@dataclass(frozen=True)
class LogLag:
    """What the log holds that is not ingested yet."""

    records: int
    files: int | None = None  # from a landing zone: its files not yet ingested
    oldest: float | None = None  # a landing zone: when the oldest of them landed (epoch s)

    def describe(self, now: float) -> str:
        """'1,204 records in 3 files, the oldest landed 4.2 s ago', or 'none'."""
        if not self.records and not self.files:
            return "none"
        said = f"{self.records:,} records"
        if self.files is not None:
            said += f" in {self.files:,} file(s)"
        if self.oldest is not None:
            said += f", the oldest landed {max(0.0, now - self.oldest):.1f} s ago"
        return said


def _last_commit(query_checkpoint: Path) -> int | None:
    """The streaming query's last committed batch (its epoch), None when none committed."""
    commits = query_checkpoint / "commits"
    numbers = [int(name) for name in _names(commits) if name.isdigit()]
    return max(numbers) if numbers else None


def _names(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def _offsets(query_checkpoint: Path, epoch: int) -> Any:
    """The source's offsets of batch `epoch` (the third line of `offsets/<epoch>`), as JSON."""
    lines = (query_checkpoint / "offsets" / str(epoch)).read_text(encoding="utf-8").splitlines()
    return json.loads(lines[2])


def ingested_files(query_checkpoint: Path) -> set[Path]:
    """The landed files of every committed ingestion batch: the file source's log entries
    up to the log batch the last committed batch read through (the latest `<n>.compact` holds
    every entry up to n; the plain files after it one log batch each)."""
    last = _last_commit(query_checkpoint)
    if last is None:
        return set()
    through = int(_offsets(query_checkpoint, last)["logOffset"])
    source_log = query_checkpoint / "sources" / "0"
    names = _names(source_log)
    compacts = [
        int(name.removesuffix(".compact"))
        for name in names
        if name.endswith(".compact") and int(name.removesuffix(".compact")) <= through
    ]
    start = max(compacts) if compacts else -1
    logs = [f"{start}.compact"] if compacts else []
    logs += [str(number) for number in range(start + 1, through + 1)]
    found: set[Path] = set()
    for name in logs:
        path = source_log / name
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            if line.strip():
                entry = json.loads(line)
                if entry["batchId"] <= through:
                    found.add(local_path(entry["path"]))
    return found


def landing_lag(landing: Path, query_checkpoint: Path) -> LogLag:
    """The files landed in `landing`'s topics/ (as ingestion reads them: *.jsonl, hidden
    names left out, being written) that no committed batch took, and their lines."""
    landing = landing.resolve()
    taken = ingested_files(query_checkpoint)
    files = records = 0
    oldest: float | None = None
    for directory, subdirectories, names in os.walk(landing / "topics"):
        subdirectories[:] = [name for name in subdirectories if not name.startswith((".", "_"))]
        for name in names:
            if not name.endswith(".jsonl") or name.startswith((".", "_")):
                continue
            path = Path(directory) / name
            if path in taken:
                continue
            try:
                landed = path.stat().st_mtime
                lines = _lines(path)
            except FileNotFoundError:
                continue  # moved away meanwhile
            files += 1
            records += lines
            oldest = landed if oldest is None else min(oldest, landed)
    return LogLag(records, files, oldest)


def _lines(path: Path) -> int:
    """A landed file's records: its lines (each ends in a newline)."""
    with path.open("rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def kafka_lag(spark: Any, source: KafkaSource, query_checkpoint: Path) -> LogLag:
    """Each partition of the log's topics: its latest offset on the brokers less the offset
    the last committed batch read up to (the partition's earliest offset where none did)."""
    from kappa_shop.runtime.kafka import answer_of, kafka_admin

    last = _last_commit(query_checkpoint)
    committed: dict[str, dict[str, int]] = (
        _offsets(query_checkpoint, last) if last is not None else {}
    )
    jvm = spark.sparkContext._jvm
    admin_api = jvm.org.apache.kafka.clients.admin
    with kafka_admin(spark, source.bootstrap_servers, source.options) as admin:
        present = set(answer_of(spark, admin.listTopics().names()))
        names = [name for name in source.topic_names() if name in present]
        if not names:
            return LogLag(0)
        described = answer_of(spark, admin.describeTopics(names).allTopicNames())
        partitions = [
            (name, int(partition.partition()))
            for name in names
            for partition in described.get(name).partitions()
        ]

        def offsets(spec: Any) -> dict[tuple[str, int], int]:
            request = jvm.java.util.HashMap()
            for name, number in partitions:
                request.put(jvm.org.apache.kafka.common.TopicPartition(name, number), spec)
            answer = answer_of(spark, admin.listOffsets(request).all())
            return {
                (name, number): int(
                    answer.get(jvm.org.apache.kafka.common.TopicPartition(name, number)).offset()
                )
                for name, number in partitions
            }

        latest = offsets(admin_api.OffsetSpec.latest())
        earliest = offsets(admin_api.OffsetSpec.earliest())
    records = 0
    for (name, number), end in latest.items():
        read = committed.get(name, {}).get(str(number))
        records += max(0, end - (earliest[(name, number)] if read is None else int(read)))
    return LogLag(records)
