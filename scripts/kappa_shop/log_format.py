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
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Topic:
    """A topic of the log and the raw table it is ingested into."""

    name: str
    key_field: str
    description: str

    @property
    def raw_table(self) -> str:
        """Name of the append-only raw table holding this topic's deliveries."""
        return f"raw_{self.name}"


TOPICS: tuple[Topic, ...] = (
    Topic("web_events", "user_id", "app events: page views and add-to-cart, keyed by user"),
    Topic("searches", "user_id", "site searches with the products shown, keyed by user"),
    Topic("search_clicks", "user_id", "clicks on search results, keyed by user"),
    Topic("order_events", "order_id", "order lifecycle events, keyed by order"),
    Topic("inventory_changes", "product_id", "stock changes per product, keyed by product"),
    Topic(
        "user_profile_changes",
        "user_id",
        "change log of the user-profile database (create/update/delete with an LSN)",
    ),
)
TOPICS_BY_NAME: dict[str, Topic] = {topic.name: topic for topic in TOPICS}

# Required payload fields and their JSON types, per topic and event type. A record missing one
# of these, or holding the wrong type, is malformed.
PAYLOAD_FIELDS: dict[str, dict[str, dict[str, type | tuple[type, ...]]]] = {
    "web_events": {
        "page_view": {"user_id": str, "page_path": str},
        "add_to_cart": {"user_id": str, "product_id": str, "quantity": int, "unit_price": float},
    },
    "searches": {
        "search": {"user_id": str, "search_id": str, "query": str, "result_product_ids": list},
    },
    "search_clicks": {
        "search_result_click": {
            "user_id": str,
            "query": str,
            "position": int,
            "product_id": str,
        },
    },
    "order_events": {
        "order_placed": {
            "order_id": str,
            "user_id": str,
            "items": list,
            "amount": float,
            "currency": str,
        },
        "payment_failed": {"order_id": str, "user_id": str, "amount": float, "reason": str},
        "order_paid": {"order_id": str, "user_id": str, "amount": float},
        "order_shipped": {"order_id": str, "user_id": str, "carrier": str},
        "order_cancelled": {"order_id": str, "user_id": str, "reason": str},
    },
    "inventory_changes": {
        "restock": {"product_id": str, "quantity_delta": int},
        "reservation": {"product_id": str, "quantity_delta": int, "order_id": str},
        "release": {"product_id": str, "quantity_delta": int, "order_id": str},
    },
    "user_profile_changes": {
        "user_created": {"lsn": int, "user_id": str, "email": str, "country": str, "tier": str},
        "user_updated": {"lsn": int, "user_id": str, "email": str, "country": str, "tier": str},
        "user_deleted": {"lsn": int, "user_id": str},
    },
}

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

# A record longer than this (in UTF-8 bytes) is oversize: the staging layer quarantines it.
MAX_RECORD_BYTES = 8_192


def encode(record: dict[str, Any]) -> str:
    """Serialize a record as one compact JSON line, fields in insertion order (deterministic)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def format_event_time(epoch_millis: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds: 2024-03-01T09:00:00.123Z."""
    from datetime import UTC, datetime, timedelta

    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_millis % 1000:03d}Z"
