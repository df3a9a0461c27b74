"""The shape of the log: topics, the broker-style envelope every record carries, and the
payload each event type requires.

One landed record is one line of JSON:

    {"topic": "order_events", "partition": 2, "offset": 1041, "key": "o-000123",
     "event_id": "5f0c...", "event_type": "order_paid", "event_time": "2024-03-01T09:12:45.120Z",
     "schema_version": 1, "payload": {"order_id": "o-000123", "user_id": "u-000042", ...}}

- topic, partition, offset: where the broker appended it; offsets grow by one per record
  within a topic-partition, in arrival order (so a late event gets a high offset).
- key: the partition key (user, order or product id); records with one key share a partition.
- event_id: the producer's id of the event; a redelivery repeats it with a new offset.
- event_time: when it happened, by the producer's clock (which may be skewed), ISO-8601 UTC.
- schema_version: the version of the payload's shape.

This module is the single description of that shape; the generator writes it, the seeds
follow it, and the staging models read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Topic:
    """A topic of the log and the raw table it is ingested into."""

    name: str
    key_field: str

    @property
    def raw_table(self) -> str:
        """Name of the append-only raw table holding this topic's deliveries."""
        return f"raw_{self.name}"


# Required payload fields and their JSON types, per topic and event type: read from the
# `log_streams` var of dbt_project.yml, the one description the SQL validation shares.
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": float,
    "array": list,
}


def _load_streams() -> dict[str, Any]:
    project_file = Path(__file__).resolve().parents[3] / "dbt_project.yml"
    return yaml.safe_load(project_file.read_text())["vars"]["log_streams"]


_STREAMS = _load_streams()
PAYLOAD_FIELDS: dict[str, dict[str, dict[str, type | tuple[type, ...]]]] = {
    topic: {
        event_type: {name: _JSON_TYPES[kind] for name, kind in fields.items()}
        for event_type, fields in stream["event_types"].items()
    }
    for topic, stream in _STREAMS.items()
}

# The topics, in the order of var `log_streams`.
TOPICS: tuple[Topic, ...] = tuple(
    Topic(name, stream["key_field"]) for name, stream in _STREAMS.items()
)
TOPICS_BY_NAME: dict[str, Topic] = {topic.name: topic for topic in TOPICS}

ENVELOPE_FIELDS: tuple[str, ...] = (
    "topic",
    "partition",
    "offset",
    "key",
    "event_id",
    "event_type",
    "event_time",
    "schema_version",
    "payload",
)

# A record longer than this (in UTF-8 bytes) is oversize: the staging layer quarantines it
# (dbt var `max_record_bytes`).
MAX_RECORD_BYTES = 8_192


def encode(record: dict[str, Any]) -> str:
    """Serialize a record as one compact JSON line, fields in insertion order (deterministic)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def format_event_time(epoch_millis: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds: 2024-03-01T09:00:00.123Z."""
    from datetime import UTC, datetime, timedelta

    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_millis % 1000:03d}Z"
