"""Adversarial deliveries for the proof: late events at the edges of the models' declared reach.

On a small random log, a late event rarely lands where a bug in how far a change reaches would
show: just before a day boundary, close enough to change the next day's rows, in a batch that
touches nothing else near it. This module appends two arrival batches to a generated log, built
from every reach the days models declare (`input_reach` in the dbt manifest, plus the day
boundary itself, reach 0), for each stream that has events near a midnight B. Each copy is of
a real event e (same key, payload and type; a new event id), moved:

- **inside** a reach of R before: e lies less than R after B; the copy goes to 1 second
  before B. It lies on the day before, and day B's rows that read the R before them change.
  **Outside**: to B - R - 1 ms, where it changes its own day only.
- **inside** a reach of A after: e lies less than A before B; the copy goes to A - 1 second
  after B, and day B-1's windows that end after midnight change. **Outside**: B + A + 1 ms.
- the boundary itself (reach 0): a copy of an event of B's first hour to B exactly (inside),
  and to 1 ms before B (outside).

The batches are split by the side of a midnight the copies land on, not by inside and
outside. The first holds every copy at or after a midnight Ba: no new event of it lies on day
Ba-1, so only a reach of A after can make a run recompute that day. The second, delivered
last, every copy before a midnight Bb: no new event of it lies on day Bb, so only a reach of
R before can make a run recompute that day. Ba is another midnight than Bb when the log has
one (a log of two days has one midnight): the second batch lands on day Bb-1, and were that
day Ba-1, the run of the second would recompute it and hide a miss of the first. (The proof
compares the tables once, at the end: a day a bug missed must not be recomputed after it.)

The proof delivers each batch alone, after every other round, so each is late and alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kappa_shop.generator import read_manifest

# the streams whose copies stay plain new events (a copied profile change would repeat its
# LSN, a copied inventory change would only shift a running total that every day recomputes)
EDGE_TOPICS = ("web_events", "searches", "search_clicks", "order_events")
_INTERVAL = re.compile(r"^\s*(\d+)\s+(second|minute|hour|day)s?\s*$")
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True)
class Reach:
    """How far one day's input lies outside the day, in seconds (input_reach)."""

    before: int = 0
    after: int = 0


def interval_seconds(text: str) -> int:
    """A Spark interval literal of input_reach ('1 hour', '30 minutes') in seconds."""
    match = _INTERVAL.match(text)
    if match is None:
        raise ValueError(f"not an interval input_reach takes: {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2)]


def declared_reaches(manifest: Any) -> list[Reach]:
    """Every distinct reach of the manifest's exact_incremental models partitioned by day,
    and reach 0 (the boundary itself). A running total (before: 'all') counts as reach 0: it
    recomputes every later day anyway."""
    reaches = {Reach()}
    for node in manifest.nodes.values():
        if node.resource_type != "model" or node.config.materialized != "exact_incremental":
            continue
        reach = node.config.get("input_reach") or {}
        before = reach.get("before", "0 minutes")
        reaches.add(
            Reach(
                before=0 if before == "all" else interval_seconds(before),
                after=interval_seconds(reach.get("after", "0 minutes")),
            )
        )
    return sorted(reaches, key=lambda reach: (reach.before, reach.after))


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _format_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _valid_events(log_dir: Path, manifest: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The log's well-formed records of the edge topics, by topic, in event-time order."""
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in manifest["batches"]:
        for topic in EDGE_TOPICS:
            for path in sorted((log_dir / entry["directory"] / "topics" / topic).rglob("*.jsonl")):
                for line in path.read_text(errors="replace").splitlines():
                    try:
                        record = json.loads(line)
                        record["_at"] = _parse_time(record["event_time"])
                        well_formed = all(
                            isinstance(record[field], str) and record[field]
                            for field in ("event_id", "event_type", "key")
                        ) and isinstance(record["payload"], dict)
                    except (ValueError, KeyError, TypeError, AttributeError):
                        continue  # malformed on purpose: not a model for a copy
                    if well_formed:
                        events[topic].append(record)
    for records in events.values():
        records.sort(key=lambda record: (record["_at"], record["event_id"]))
    return events


def _near(records: list[dict[str, Any]], start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The records with an event time in [start, end)."""
    return [record for record in records if start <= record["_at"] < end]


def _midnights(events: dict[str, list[dict[str, Any]]]) -> list[datetime]:
    """The midnights inside the log's event times (every day start but the first)."""
    midnight = {"hour": 0, "minute": 0, "second": 0, "microsecond": 0}
    days = {record["_at"].replace(**midnight) for records in events.values() for record in records}
    return sorted(days)[1:]


def _copies_at(
    records: list[dict[str, Any]], reaches: Iterable[Reach], boundary: datetime
) -> list[tuple[dict, datetime]]:
    """For one topic and the midnight `boundary`: every copy (an original and its new time),
    inside and outside each reach that has an event to copy."""
    copies: list[tuple[dict, datetime]] = []
    second, millisecond = timedelta(seconds=1), timedelta(milliseconds=1)
    for reach in reaches:
        before, after = timedelta(seconds=reach.before), timedelta(seconds=reach.after)
        if reach.after:
            near = _near(records, boundary - after, boundary)
            times = (boundary + after - second, boundary + after + millisecond)
        elif reach.before:
            near = _near(records, boundary, boundary + before - second)
            times = (boundary - second, boundary - before - millisecond)
        else:  # the boundary itself: a copy of an event of the first hour
            near = _near(records, boundary, boundary + timedelta(hours=1))
            times = (boundary, boundary - millisecond)
        if near:
            copies += [(near[0], moment) for moment in times]
    return copies


def _edge_batches(
    events: dict[str, list[dict[str, Any]]], reaches: list[Reach]
) -> list[tuple[str, datetime, dict[str, list[tuple[dict, datetime]]]]]:
    """The two batches of copies, in the order they are delivered: (side, midnight, copies by
    topic). First the copies at or after a midnight Ba, then those before a midnight Bb, each
    the midnight with the most such copies (the latest of those), Ba another than Bb when the
    log has another with copies."""
    candidates = []
    for boundary in _midnights(events):
        copies = {
            topic: _copies_at(records, reaches, boundary) for topic, records in events.items()
        }
        sides = {
            side: {
                topic: [(original, moment) for original, moment in planned if keep(moment)]
                for topic, planned in copies.items()
            }
            for side, keep in (
                ("before", lambda moment, b=boundary: moment < b),
                ("after", lambda moment, b=boundary: moment >= b),
            )
        }
        candidates.append((boundary, sides))

    def count(side: str, sides: dict) -> int:
        return sum(len(planned) for planned in sides[side].values())

    def best(side: str, other_than: datetime | None = None) -> tuple | None:
        ranked = [
            (count(side, sides), boundary, sides[side])
            for boundary, sides in candidates
            if count(side, sides) and boundary != other_than
        ]
        return max(ranked, key=lambda entry: entry[:2], default=None)

    before = best("before")
    if before is None:
        return []
    after = best("after", other_than=before[1]) or best("after")
    batches = [("after", after[1], after[2])] if after else []
    return [*batches, ("before", before[1], before[2])]


def add_edge_batches(log_dir: Path, reaches: list[Reach]) -> list[int]:
    """Append the two batches of copies (_edge_batches) to the log at `log_dir` (files and
    manifest); their batch numbers, in the order they are to be delivered. A stream with no
    event near a midnight gets no copy; a log without a midnight, no batch."""
    manifest = read_manifest(log_dir)
    events = _valid_events(log_dir, manifest)
    next_offset = dict(manifest["partition_end_offsets"])
    numbers = []
    for side, boundary, copies in _edge_batches(events, reaches):
        number = max(entry["batch"] for entry in manifest["batches"]) + 1
        directory = f"batch={number:06d}"
        by_partition: dict[tuple[str, int], list[str]] = defaultdict(list)
        for topic, planned in copies.items():
            for index, (original, moment) in enumerate(planned):
                partition = original["partition"]
                offset = next_offset[f"{topic}/{partition}"] + len(by_partition[(topic, partition)])
                record = {key: value for key, value in original.items() if key != "_at"}
                record.update(
                    offset=offset,
                    event_id=hashlib.md5(f"edge {number} {topic} {index}".encode()).hexdigest(),
                    event_time=_format_time(moment),
                )
                by_partition[(topic, partition)].append(json.dumps(record, separators=(",", ":")))
        records_by_topic: dict[str, int] = defaultdict(int)
        for (topic, partition), lines in sorted(by_partition.items()):
            first = next_offset[f"{topic}/{partition}"]
            path = log_dir / directory / "topics" / topic / f"partition={partition}"
            path.mkdir(parents=True, exist_ok=True)
            (path / f"{topic}+{partition}+{first:012d}.jsonl").write_text("\n".join(lines) + "\n")
            next_offset[f"{topic}/{partition}"] = first + len(lines)
            records_by_topic[topic] += len(lines)
        manifest["batches"].append(
            {
                "batch": number,
                "directory": directory,
                "files": len(by_partition),
                "records": sum(records_by_topic.values()),
                "records_by_topic": dict(records_by_topic),
                "stragglers_only": True,
                "reach_edges": f"{side} {_format_time(boundary)}",
            }
        )
        numbers.append(number)
    manifest["partition_end_offsets"] = next_offset
    (log_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return numbers
