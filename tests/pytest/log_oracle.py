"""An independent reading of a generated log: every landed line classified into exactly one
category from the format's rules alone (kappa_shop.log.format), knowing nothing of how the
generator made it. Tests reconcile these counts with the generator's manifest."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kappa_shop.log.format import MAX_RECORD_BYTES, PAYLOAD_FIELDS

ENVELOPE_REQUIRED = ("topic", "partition", "offset", "key", "event_id", "event_type", "event_time")


@dataclass
class LandedLine:
    batch: int
    topic: str
    partition: int
    file_first_offset: int
    text: str


@dataclass
class Classified:
    counts: dict[str, Counter] = field(default_factory=dict)  # topic -> category -> n
    drift: Counter = field(default_factory=Counter)  # topic -> valid records with extra fields
    valid_records: list[dict[str, Any]] = field(default_factory=list)


def landed_lines(log_dir: Path) -> Iterator[LandedLine]:
    """Every line of every file, in batch order, then file order (offset order)."""
    for batch_dir in sorted(log_dir.glob("batch=*")):
        batch = int(batch_dir.name.split("=")[1])
        for path in sorted(batch_dir.rglob("*.jsonl")):
            topic, partition, first_offset = path.stem.split("+")
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    yield LandedLine(batch, topic, int(partition), int(first_offset), line[:-1])


def _type_ok(value: Any, expected: type | tuple[type, ...]) -> bool:
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def defect(line: LandedLine) -> tuple[str, dict[str, Any] | None]:
    """The malformed kind of a line, or 'ok', and the parsed record when it parses."""
    try:
        record = json.loads(line.text)
    except json.JSONDecodeError:
        return "not_json", None
    if not isinstance(record, dict):
        return "not_json", None
    if len(line.text.encode("utf-8")) > MAX_RECORD_BYTES:
        return "oversize_record", record
    if any(name not in record for name in ("event_id", "event_time")):
        return "missing_required_field", record
    if record.get("key") is None:
        return "null_key", record
    types = PAYLOAD_FIELDS.get(record["topic"], {})
    if record.get("event_type") not in types:
        return "unknown_event_type", record
    payload = record.get("payload", {})
    required = types[record["event_type"]]
    if any(name not in payload for name in required):
        return "missing_required_field", record
    if any(not _type_ok(payload[name], kind) for name, kind in required.items()):
        return "wrong_type", record
    year = int(record["event_time"][:4])
    if year >= 2100:
        return "event_time_in_future", record
    if year < 1970:
        return "event_time_before_epoch", record
    datetime.strptime(record["event_time"], "%Y-%m-%dT%H:%M:%S.%fZ")  # must parse
    return "ok", record


def classify(lines: Iterable[LandedLine]) -> Classified:
    """Classify every line, in arrival order: valid, duplicate, conflicting_duplicate, or a
    malformed kind."""
    result = Classified()
    first_seen: dict[str, str] = {}
    for line in lines:
        counts = result.counts.setdefault(line.topic, Counter())
        kind, record = defect(line)
        if kind != "ok":
            counts[kind] += 1
            continue
        assert record is not None
        content = json.dumps(
            {name: record[name] for name in ("key", "event_type", "event_time", "payload")},
            sort_keys=True,
        )
        previous = first_seen.get(record["event_id"])
        if previous is None:
            first_seen[record["event_id"]] = content
            counts["valid"] += 1
            required = PAYLOAD_FIELDS[record["topic"]][record["event_type"]]
            if set(record["payload"]) - set(required):
                result.drift[line.topic] += 1
            result.valid_records.append({**record, "_batch": line.batch})
        elif previous == content:
            counts["duplicate"] += 1
        else:
            counts["conflicting_duplicate"] += 1
    return result


def seed_lines(project_root: Path) -> list[LandedLine]:
    """The canonical sample log (seeds/sample_log), as landed lines in arrival order."""
    lines = []
    for path in sorted((project_root / "seeds" / "sample_log").glob("raw_*.csv")):
        if path.stem == "raw_ingestion_batches":
            continue
        rows = path.read_text(encoding="utf-8").splitlines()[1:]
        for row in rows:
            batch, _, source_file, text = row.split("|", 3)
            _, topic, partition, name = source_file.split("/")
            first_offset = int(name.rsplit("+", 1)[1].split(".")[0])
            lines.append(
                LandedLine(int(batch), topic, int(partition.split("=")[1]), first_offset, text)
            )
    return sorted(lines, key=lambda line: (line.batch, line.topic, line.partition))


ACTIVITY_TYPES = ("page_view", "add_to_cart", "search", "search_result_click")


def activity_sessions(classified: Classified, gap: timedelta) -> list[tuple]:
    """Sessions of the valid activity events (page views, add-to-carts, searches, clicks) as
    (user, start, end, events, page views, landing, exit, is_bounce, seconds). An event more
    than `gap` after the user's previous one, or on a later UTC day, starts a new session;
    events at the same time are ordered by event id. Landing and exit are the first and last
    page view (None without one)."""
    events = sorted(
        (
            record["payload"]["user_id"],
            datetime.strptime(record["event_time"], "%Y-%m-%dT%H:%M:%S.%fZ"),
            record["event_id"],
            record["event_type"],
            record["payload"].get("page_path"),
        )
        for record in classified.valid_records
        if record["event_type"] in ACTIVITY_TYPES
    )
    sessions: list[tuple] = []
    current: list[tuple] = []
    for event in events:
        previous = current[-1] if current else None
        if previous and (
            event[0] != previous[0]
            or event[1] - previous[1] > gap
            or event[1].date() != previous[1].date()
        ):
            sessions.append(_session(current))
            current = []
        current.append(event)
    if current:
        sessions.append(_session(current))
    return sessions


def _session(events: list[tuple]) -> tuple:
    start, end = events[0][1], events[-1][1]
    views = [event for event in events if event[3] == "page_view"]
    return (
        events[0][0],
        start.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        end.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        len(events),
        len(views),
        views[0][4] if views else None,
        views[-1][4] if views else None,
        len(events) == 1,
        int((end - start).total_seconds()),
    )
