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

from kappa_shop.log.generator import read_manifest

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


def _well_formed(line: str) -> dict[str, Any] | None:
    """A log line as a record with its event time (`_at`) and text (`_line`), or None when it
    is malformed on purpose (not JSON, no event time, no id, type or key, a payload that is
    not an object)."""
    try:
        record = json.loads(line)
        record["_at"] = _parse_time(record["event_time"])
        well_formed = all(
            isinstance(record[field], str) and record[field]
            for field in ("event_id", "event_type", "key")
        ) and isinstance(record["payload"], dict)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not well_formed:
        return None
    record["_line"] = line
    return record


def _valid_events(log_dir: Path, manifest: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The log's well-formed records of the edge topics, by topic, in event-time order."""
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in manifest["batches"]:
        for topic in EDGE_TOPICS:
            for path in sorted((log_dir / entry["directory"] / "topics" / topic).rglob("*.jsonl")):
                for line in path.read_text(errors="replace").splitlines():
                    record = _well_formed(line)
                    if record is not None:  # (malformed on purpose: not a model for a copy)
                        events[topic].append(record)
    for records in events.values():
        records.sort(key=lambda record: (record["_at"], record["event_id"]))
    return events


def _near(records: list[dict[str, Any]], start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The records with an event time in [start, end)."""
    return [record for record in records if start <= record["_at"] < end]


def _history_days(times: Iterable[datetime]) -> list[datetime]:
    """The days (their midnights) of the log's history: every day with events, but a day at
    either end with under a tenth of a typical day's (the minutes a skewed clock puts on the
    day before the period starts)."""
    counts: dict[datetime, int] = defaultdict(int)
    for moment in times:
        counts[moment.replace(hour=0, minute=0, second=0, microsecond=0)] += 1
    days = sorted(counts)
    typical = sorted(counts.values())[len(counts) // 2] if counts else 0
    while len(days) > 1 and counts[days[0]] * 10 < typical:
        days.pop(0)
    while len(days) > 1 and counts[days[-1]] * 10 < typical:
        days.pop()
    return days


def _midnights(events: dict[str, list[dict[str, Any]]]) -> list[datetime]:
    """The midnights inside the log's history (every day start but the first)."""
    return _history_days(record["_at"] for records in events.values() for record in records)[1:]


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
    events: dict[str, list[dict[str, Any]]],
    reaches: list[Reach],
    old_day: datetime | None = None,
) -> list[tuple[str, datetime, dict[str, list[tuple[dict, datetime]]]]]:
    """The two batches of copies, in the order they are delivered: (side, midnight, copies by
    topic). First the copies at or after a midnight Ba, then those before a midnight Bb.

    A run of the first can miss a row of day Ba-1 (a reach after), a run of the second one of
    day Bb (a reach before). The pair is chosen, among those that keep apart what one run could
    hide of another, for the most reaches with a copy, then for midnights inside the log's
    history (a day of events before the day before and after the day after, so that a row
    computed for a neighbouring day that is not recomputed has rows around it to go wrong
    with), then the most copies, then the latest. Kept apart, where the log allows: Ba is
    neither Bb nor the midnight after it (the second batch lands on day Bb-1, and its run
    recomputes that day and, reaching before, day Bb: were either day Ba-1, it would hide a
    miss of the first); and neither day Ba-1 nor Bb lies within a day of `old_day`, whose
    batch (add_old_day_batch), delivered after both, recomputes it and the days either side."""
    midnights = _midnights(events)
    candidates = []
    for boundary in midnights:
        by_topic = {
            topic: _copies_at(records, reaches, boundary) for topic, records in events.items()
        }
        sides = {
            side: {
                topic: [(original, moment) for original, moment in planned if keep(moment)]
                for topic, planned in by_topic.items()
            }
            for side, keep in (
                ("before", lambda moment, b=boundary: moment < b),
                ("after", lambda moment, b=boundary: moment >= b),
            )
        }
        candidates.append((boundary, sides))
    day = timedelta(days=1)
    near_old_day = (
        {old_day + offset * day for offset in (-1, 0, 1)} if old_day is not None else set()
    )

    def rank(side: str, boundary: datetime, sides: dict) -> tuple[int, int, int]:
        planned = [moment - boundary for placed in sides[side].values() for _, moment in placed]
        # (midnights[0] starts the log's second day: the day before a later midnight has a
        # day before it; the day after one but the last, a day after it)
        inside_history = midnights[0] < boundary < midnights[-1]
        return (len(set(planned)), int(inside_history), len(planned))

    ranks = {
        (side, boundary): rank(side, boundary, sides)
        for boundary, sides in candidates
        for side in ("before", "after")
        if any(sides[side].values())
    }
    copies = {(side, boundary): sides[side] for boundary, sides in candidates for side in sides}
    befores = [boundary for side, boundary in ranks if side == "before"]
    afters = [boundary for side, boundary in ranks if side == "after"]
    if not befores:
        return []
    if not afters:
        bb = max(befores, key=lambda boundary: (ranks[("before", boundary)], boundary))
        return [("before", bb, copies[("before", bb)])]
    # the pairs (Ba, Bb) by how well they keep apart what one run could hide of the other, or
    # of the old day's: the first kind that has a pair
    tiers = (
        lambda ba, bb: (
            ba not in (bb, bb + day) and bb not in near_old_day and ba - day not in near_old_day
        ),
        lambda ba, bb: ba not in (bb, bb + day),
        lambda ba, bb: ba != bb,
        lambda ba, bb: True,
    )
    for keeps_apart in tiers:
        pairs = [(ba, bb) for ba in afters for bb in befores if keeps_apart(ba, bb)]
        if pairs:
            break
    ba, bb = max(
        pairs,
        key=lambda pair: (
            tuple(
                a + b
                for a, b in zip(ranks[("after", pair[0])], ranks[("before", pair[1])], strict=True)
            ),
            pair,
        ),
    )
    return [("after", ba, copies[("after", ba)]), ("before", bb, copies[("before", bb)])]


def _append_batch(
    log_dir: Path,
    manifest: dict[str, Any],
    number: int,
    lines: dict[tuple[str, int], list[str]],
    **label: str,
) -> None:
    """Write arrival batch `number` of the log: each topic-partition's lines (in offset order)
    as one file named by its first offset, and its entry in `manifest` (a batch of late events
    only, with `label`: what it is for)."""
    directory = f"batch={number:06d}"
    records_by_topic: dict[str, int] = defaultdict(int)
    for (topic, partition), written in sorted(lines.items()):
        first = json.loads(written[0])["offset"]
        path = log_dir / directory / "topics" / topic / f"partition={partition}"
        path.mkdir(parents=True, exist_ok=True)
        (path / f"{topic}+{partition}+{first:012d}.jsonl").write_text("\n".join(written) + "\n")
        records_by_topic[topic] += len(written)
    manifest["batches"].append(
        {
            "batch": number,
            "directory": directory,
            "files": len(lines),
            "records": sum(records_by_topic.values()),
            "records_by_topic": dict(records_by_topic),
            "stragglers_only": True,
            **label,
        }
    )


def add_edge_batches(
    log_dir: Path, reaches: list[Reach], old_day: datetime | None = None
) -> list[int]:
    """Append the two batches of copies (_edge_batches) to the log at `log_dir` (files and
    manifest); their batch numbers, in the order they are to be delivered. A stream with no
    event near a midnight gets no copy; a log without a midnight, no batch."""
    manifest = read_manifest(log_dir)
    events = _valid_events(log_dir, manifest)
    next_offset = dict(manifest["partition_end_offsets"])
    numbers = []
    for side, boundary, copies in _edge_batches(events, reaches, old_day):
        number = max(entry["batch"] for entry in manifest["batches"]) + 1
        by_partition: dict[tuple[str, int], list[str]] = defaultdict(list)
        for topic, planned in copies.items():
            for index, (original, moment) in enumerate(planned):
                partition = original["partition"]
                offset = next_offset[f"{topic}/{partition}"] + len(by_partition[(topic, partition)])
                record = {
                    key: value for key, value in original.items() if key not in ("_at", "_line")
                }
                record.update(
                    offset=offset,
                    event_id=hashlib.md5(f"edge {number} {topic} {index}".encode()).hexdigest(),
                    event_time=_format_time(moment),
                )
                by_partition[(topic, partition)].append(json.dumps(record, separators=(",", ":")))
        for (topic, partition), written in by_partition.items():
            next_offset[f"{topic}/{partition}"] += len(written)
        _append_batch(
            log_dir, manifest, number, by_partition, reach_edges=f"{side} {_format_time(boundary)}"
        )
        numbers.append(number)
    manifest["partition_end_offsets"] = next_offset
    (log_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return numbers


def _movable(
    log_dir: Path, manifest: dict[str, Any]
) -> list[tuple[datetime, str, Path, int, dict[str, Any]]]:
    """Every well-formed record of the log's arrival batches (not the reach-edge copies) but the
    first of its file (whose offset names the file): (day, topic, file, line number, record)."""
    from kappa_shop.log.format import TOPICS

    movable = []
    for entry in manifest["batches"]:
        if "reach_edges" in entry:
            continue
        for topic in (topic.name for topic in TOPICS):
            for path in sorted((log_dir / entry["directory"] / "topics" / topic).rglob("*.jsonl")):
                for number, line in enumerate(path.read_text(errors="replace").splitlines()):
                    record = _well_formed(line)
                    if record is not None and number > 0:
                        day = record["_at"].replace(hour=0, minute=0, second=0, microsecond=0)
                        movable.append((day, topic, path, number, record))
    return movable


def choose_old_day(log_dir: Path) -> datetime | None:
    """The old day whose events add_old_day_batch holds back: a day with events of the most
    topics (rare ones, such as profile changes, included: every model is to meet the batch),
    with a day of events before it and after it where the log has them; of those, the one
    nearest the third day of the log's history (two days before it, the rest after). None for
    a log of one day."""
    movable = _movable(log_dir, read_manifest(log_dir))
    days = _history_days(record["_at"] for *_, record in movable)
    if len(days) < 2:
        return None
    topics: dict[datetime, set[str]] = defaultdict(set)
    for day, topic, *_ in movable:
        topics[day].add(topic)
    inside = days[1:-1] or days[:-1]
    target = min(2, len(days) - 2)
    return max(inside, key=lambda day: (len(topics[day]), -abs(days.index(day) - target)))


def add_old_day_batch(log_dir: Path, old_day: datetime, per_topic: int = 2) -> int:
    """Hold back a few events of the old day D (choose_old_day): move `per_topic` well-formed
    records of each topic whose event time lies on D out of their arrival batches into a batch
    of their own, appended to the log (files and manifest); its number.

    The batch holds nothing but D's events, the earliest and latest of the day for each topic,
    so everything a run must recompute beyond D follows from each model's declared reach alone:
    the day after (a reach after midnight), every later day (a running total), the buckets of
    their keys. Delivered last and alone, no later run recomputes what its run missed (and
    the reach-edge batches, added before, keep the days they test a day away from D's). The
    records keep their offsets; the files they leave keep their first record."""
    from kappa_shop.log.format import TOPICS

    manifest = read_manifest(log_dir)
    movable = _movable(log_dir, manifest)
    moved: dict[Path, set[int]] = defaultdict(set)
    by_partition: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for topic in (topic.name for topic in TOPICS):
        on_day = sorted(
            (entry for entry in movable if entry[0] == old_day and entry[1] == topic),
            key=lambda entry: (entry[4]["_at"], entry[4]["event_id"]),
        )
        # the earliest and the latest of the day, and as many evenly between as asked for
        picks = {round(i * (len(on_day) - 1) / max(per_topic - 1, 1)) for i in range(per_topic)}
        for _, _, path, number, record in (on_day[i] for i in sorted(picks) if on_day):
            moved[path].add(number)
            by_partition[(topic, record["partition"])].append(record)
    by_directory = {entry["directory"]: entry for entry in manifest["batches"]}
    for path, numbers in moved.items():
        lines = path.read_text(errors="replace").splitlines()
        path.write_text("\n".join(line for i, line in enumerate(lines) if i not in numbers) + "\n")
        source = by_directory[path.relative_to(log_dir).parts[0]]
        topic = path.relative_to(log_dir).parts[2]
        source["records"] -= len(numbers)
        source["records_by_topic"][topic] -= len(numbers)
    number = max(entry["batch"] for entry in manifest["batches"]) + 1
    appended = {
        key: [record["_line"] for record in sorted(records, key=lambda record: record["offset"])]
        for key, records in by_partition.items()
    }
    _append_batch(log_dir, manifest, number, appended, old_day=old_day.date().isoformat())
    (log_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return number
