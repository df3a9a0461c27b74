"""Delivery (arrival time), the generator's second layer: every emitted event gets a delivery
delay (usually seconds; for a fraction of events minutes, hours or days: the late tail), the
producer's clock skew, a partition by key; some are redelivered (same event_id, new offset),
some with a conflicting payload, some malformed in one of the ways a real log is, some carry an
unknown extra field. Records are held until they arrive, then written into the files of their
arrival batch (Writer), offsets growing in arrival order per partition."""

from __future__ import annotations

import heapq
import itertools
import json
import math
import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kappa_shop.log.config import DAY, HOUR, MINUTE, SECOND, GeneratorConfig
from kappa_shop.log.format import (
    MAX_RECORD_BYTES,
    PAYLOAD_FIELDS,
    SCHEMA_VERSION,
    TOPICS,
    TOPICS_BY_NAME,
    encode,
    format_event_time,
)

MALFORMED_KINDS: tuple[str, ...] = (
    "not_json",
    "missing_required_field",
    "wrong_type",
    "null_key",
    "unknown_event_type",
    "event_time_in_future",
    "event_time_before_epoch",
    "oversize_record",
)
# Relative frequency of each malformed kind (oversize records are rarer: they are large).
MALFORMED_WEIGHTS: tuple[float, ...] = (3, 3, 3, 2, 2, 1, 1, 0.5)
RECORD_CATEGORIES: tuple[str, ...] = ("valid", "duplicate", "conflicting_duplicate", "malformed")

# A record on its way: (landed at ms, sequence, partition, topic, record, cut) where cut > 0
# truncates the encoded line (a record that is not JSON).
InFlight = tuple[int, int, int, str, dict[str, Any], int]


@dataclass
class TopicCounts:
    """Ground truth for one topic: every delivered record falls in exactly one category."""

    records: int = 0
    valid: int = 0
    duplicate: int = 0
    conflicting_duplicate: int = 0
    malformed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MALFORMED_KINDS, 0))
    # sub-counts of the valid records
    late: int = 0
    schema_drift: int = 0
    skewed_clock: int = 0
    by_event_type: dict[str, int] = field(default_factory=dict)


class Writer:
    """Writes arrived records into the files of their arrival batch, one per topic-partition.

    Records come in arrival order (landed time), so batches complete in order: when the first
    record of batch k+1 comes, every file of batch k is closed.
    """

    def __init__(self, out_dir: Path, config: GeneratorConfig) -> None:
        self.out_dir = out_dir
        self.config = config
        self.batch_span = (config.end_ms - config.start_ms) / config.batches
        self.current_batch = 0
        self.files: dict[tuple[str, int], TextIO] = {}
        self.offsets: dict[tuple[str, int], int] = {}
        # one more than asked for: the stragglers that arrive after the period has ended
        self.batch_records: list[dict[str, int]] = [
            dict.fromkeys(TOPICS_BY_NAME, 0) for _ in range(config.batches + 1)
        ]
        self.batch_files: list[int] = [0] * (config.batches + 1)

    def batch_of(self, landed_ms: int) -> int:
        """Arrival batch of a record: its slice of the period, or the stragglers batch (one
        past the last) when it lands after the period has ended; only late events do."""
        if landed_ms >= self.config.end_ms:
            return self.config.batches + 1
        index = math.floor((landed_ms - self.config.start_ms) / self.batch_span)
        return max(index, 0) + 1

    def next_offset(self, topic: str, partition: int) -> int:
        key = (topic, partition)
        offset = self.offsets.get(key, self.config.first_offset)
        self.offsets[key] = offset + 1
        return offset

    def write(self, batch: int, topic: str, partition: int, offset: int, line: str) -> None:
        if batch != self.current_batch:
            self.close()
            self.current_batch = batch
        handle = self.files.get((topic, partition))
        if handle is None:
            directory = (
                self.out_dir / f"batch={batch:06d}" / "topics" / topic / f"partition={partition}"
            )
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{topic}+{partition}+{offset:012d}.jsonl"
            handle = path.open("w", encoding="utf-8", newline="\n")
            self.files[(topic, partition)] = handle
            self.batch_files[batch - 1] += 1
        handle.write(line)
        handle.write("\n")
        self.batch_records[batch - 1][topic] += 1

    def close(self) -> None:
        for handle in self.files.values():
            handle.close()
        self.files = {}


class Delivery:
    """Turns emitted events into delivered records: delay, lateness, partition, redelivery,
    malformation, drift; holds them until they arrive, then hands them to the writer."""

    def __init__(self, config: GeneratorConfig, rng: random.Random, writer: Writer) -> None:
        self.config = config
        self.rng = rng
        self.writer = writer
        self.in_flight: list[InFlight] = []
        self.sequence = itertools.count()
        self.counts: dict[str, TopicCounts] = {topic.name: TopicCounts() for topic in TOPICS}
        self.lateness_buckets: dict[str, int] = {"minutes": 0, "hours": 0, "days": 0}
        if config.held_back_fraction:
            self.lateness_buckets["held_back"] = 0
        lag_limit = int(config.max_partition_lag_minutes * MINUTE)
        # each topic-partition reaches storage with its own steady lag: disorder across partitions
        self.partition_lag = {
            (topic.name, partition): rng.randint(0, lag_limit) if lag_limit else 0
            for topic in TOPICS
            for partition in range(config.partitions)
        }

    # -- emission ---------------------------------------------------------------------------
    def emit(
        self, topic: str, event_type: str, payload: dict[str, Any], at_ms: int, skew_ms: int = 0
    ) -> None:
        """Deliver one event that happened at `at_ms` (true time), per the delivery knobs."""
        rng = self.rng
        config = self.config
        key = payload[TOPICS_BY_NAME[topic].key_field]
        record: dict[str, Any] = {
            "topic": topic,
            "partition": 0,
            "offset": 0,
            "key": key,
            "event_id": f"{rng.getrandbits(64):016x}{rng.getrandbits(64):016x}",
            "event_type": event_type,
            "event_time": format_event_time(at_ms + skew_ms),
            "schema_version": SCHEMA_VERSION,
            "payload": payload,
        }
        partition = zlib.crc32(key.encode()) % config.partitions
        arrival = at_ms + rng.randint(50, 3 * SECOND)
        counts = self.counts[topic]

        if rng.random() < config.malformed_fraction:
            kind = rng.choices(MALFORMED_KINDS, MALFORMED_WEIGHTS)[0]
            cut = self._malform(record, kind)
            if kind == "null_key":
                partition = rng.randrange(config.partitions)  # the broker spreads null keys
            counts.malformed[kind] += 1
            self._push(arrival, topic, partition, record, cut)
            return

        late = rng.random() < config.late_fraction
        if late:
            arrival += self._lateness()
            counts.late += 1
        elif config.held_back_fraction and self._held_back(at_ms):
            # arrives in the hour after the period, at most `held_back_days` after it happened
            arrival = config.end_ms + rng.randint(0, HOUR - 1)
            counts.late += 1
            self.lateness_buckets["held_back"] += 1
        if rng.random() < config.drift_fraction:
            payload["client_build"] = f"2024.{rng.randint(1, 12):02d}.{rng.randint(0, 9)}"
            counts.schema_drift += 1
        if skew_ms:
            counts.skewed_clock += 1
        counts.valid += 1
        counts.by_event_type[event_type] = counts.by_event_type.get(event_type, 0) + 1
        self._push(arrival, topic, partition, record, 0)

        if rng.random() < config.duplicate_fraction:
            # at-least-once: the same record appended again, seconds to hours later
            redelivery = arrival + int(rng.expovariate(1 / (10 * MINUTE))) + SECOND
            counts.duplicate += 1
            self._push(redelivery, topic, partition, record, 0)
        if rng.random() < config.conflict_fraction:
            conflicting = json.loads(encode(record))
            self._conflict(conflicting)
            counts.conflicting_duplicate += 1
            later = arrival + rng.randint(SECOND, HOUR)
            self._push(later, topic, partition, conflicting, 0)

    def _held_back(self, at_ms: int) -> bool:
        """Whether an event of the last `held_back_days` of the period (less an hour) is
        held back until the period has ended."""
        config = self.config
        if at_ms < config.end_ms + HOUR - int(config.held_back_days * DAY):
            return False
        return self.rng.random() < config.held_back_fraction

    def _lateness(self) -> int:
        """Extra delay of a late event: mostly minutes, some hours, a long tail of days."""
        rng = self.rng
        draw = rng.random()
        if draw < 0.6:
            self.lateness_buckets["minutes"] += 1
            return rng.randint(MINUTE, HOUR)
        if draw < 0.9:
            self.lateness_buckets["hours"] += 1
            return rng.randint(HOUR, DAY)
        self.lateness_buckets["days"] += 1
        return DAY + int(rng.expovariate(1 / (1.5 * DAY)))

    def _push(
        self,
        arrival_ms: int,
        topic: str,
        partition: int,
        record: dict[str, Any],
        cut: int,
    ) -> None:
        landed = arrival_ms + self.partition_lag[(topic, partition)]
        entry = (landed, next(self.sequence), partition, topic, record, cut)
        heapq.heappush(self.in_flight, entry)

    # -- imperfections ----------------------------------------------------------------------
    def _malform(self, record: dict[str, Any], kind: str) -> int:
        """Damage `record` in the way `kind` names; return where to cut it (not_json) or 0."""
        rng = self.rng
        payload = record["payload"]
        required = list(PAYLOAD_FIELDS[record["topic"]][record["event_type"]])
        if kind == "not_json":
            return rng.randint(10, 60)  # the line is cut short: "{"topic":"web_ev"
        if kind == "missing_required_field":
            victim = rng.choice([*required, "event_id", "event_time"])
            if victim in payload:
                del payload[victim]
            else:
                del record[victim]
        elif kind == "wrong_type":
            victim = rng.choice(required)
            value = payload[victim]
            if isinstance(value, bool | int | float):
                payload[victim] = f"{value} units"
            elif isinstance(value, list):
                payload[victim] = ",".join(str(item) for item in value) or "none"
            else:
                payload[victim] = rng.randint(1, 999)
        elif kind == "null_key":
            record["key"] = None
        elif kind == "unknown_event_type":
            record["event_type"] = rng.choice(("page_teleport", "order_levitated", "mood_change"))
        elif kind == "event_time_in_future":
            record["event_time"] = f"{rng.randint(2990, 2999)}-01-01T00:00:00.000Z"
        elif kind == "event_time_before_epoch":
            record["event_time"] = f"{rng.randint(1900, 1969)}-07-20T20:17:40.000Z"
        elif kind == "oversize_record":
            payload["debug_trace"] = "x" * (MAX_RECORD_BYTES + rng.randint(1, 2048))
        return 0

    def _conflict(self, record: dict[str, Any]) -> None:
        """Change one payload value, keeping the event_id: a redelivery that disagrees."""
        payload = record["payload"]
        for name in ("amount", "quantity_delta", "quantity", "position", "lsn"):
            if name in payload and isinstance(payload[name], int | float):
                payload[name] = payload[name] + 1
                return
        for name in ("page_path", "query", "country", "carrier", "reason", "product_id"):
            if name in payload:
                payload[name] = f"{payload[name]}-changed"
                return
        payload["user_id"] = f"{payload.get('user_id', 'u')}-changed"

    # -- arrival ----------------------------------------------------------------------------
    def arrive_until(self, now_ms: int) -> None:
        """Write every record that has landed by `now_ms`. Anything emitted from now on lands
        later (a delivery delay is at least 50 ms), so what is written is final."""
        while self.in_flight and self.in_flight[0][0] <= now_ms:
            self._write(heapq.heappop(self.in_flight))

    def arrive_all(self) -> None:
        while self.in_flight:
            self._write(heapq.heappop(self.in_flight))

    def _write(self, entry: InFlight) -> None:
        landed, _, partition, topic, record, cut = entry
        offset = self.writer.next_offset(topic, partition)
        record["partition"] = partition
        record["offset"] = offset
        line = encode(record)
        if cut:
            line = line[:cut]
        self.writer.write(self.writer.batch_of(landed), topic, partition, offset, line)
        self.counts[topic].records += 1
