"""The event log generator: an online shop simulated event by event, delivered as imperfectly
as a log-based broker delivers it, written as landed files in numbered arrival batches.

How it works, in two layers:

1. Behaviour (event time). A discrete-event simulation: each user session, order, the
   profile database and the restocking process is a Python generator that emits events and
   yields how long to wait before its next step. A heap orders the steps by time. Users browse
   in bursts separated by inactivity, search and sometimes click a result, add to cart and
   sometimes order; orders go through payment (with failures, and rare card-testing bursts),
   shipping or cancellation; inventory follows orders and restocks; profiles are created,
   updated and deleted with a log sequence number (LSN).

2. Delivery (arrival time). Every event gets a delivery delay (usually seconds; for a fraction
   of events minutes, hours or days: the late tail), the producer's clock skew on its event
   time, and a partition by key. Some events are redelivered (same event_id, new offset), some
   redelivered with a conflicting payload, some are malformed in one of the ways a real log is,
   and some carry an unknown extra field (schema drift, which is valid). Each topic-partition
   reaches storage with its own lag, so partitions are out of order with each other. A record
   is given its offset when it arrives, so offsets grow in arrival order per partition.

Output (`out/`):

    batch=000001/topics/<topic>/partition=<p>/<topic>+<p>+<first offset>.jsonl
    ...
    batch=<N+1>/...    the stragglers: records that arrive after the period ends (late only)
    manifest.json      ground truth: counts per stream, per imperfection, per batch

Memory: the simulation holds the open sessions and orders, one small state per user (capped
at MAX_USERS), and the records still in flight between emission and arrival; the records
already written are gone. None of this grows with the length of the log.

Determinism: one seeded random.Random drives everything, heap ties break by a sequence
number, JSON keys keep insertion order, and the manifest holds no timings: the same seed and
options give the same bytes.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import json
import math
import random
import resource
import time
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from kappa_shop.errors import KappaShopError
from kappa_shop.log.catalog import CATEGORIES, Product, products
from kappa_shop.log.format import (
    MAX_RECORD_BYTES,
    PAYLOAD_FIELDS,
    SCHEMA_VERSION,
    TOPICS,
    TOPICS_BY_NAME,
    encode,
    format_event_time,
)

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

MAX_USERS = 180_000
# Mean number of valid events one session leads to (page views, searches, clicks,
# carts, and the order, payment, shipping and inventory events that follow), used to set the
# session arrival rate for a requested scale: traffic is spread over the whole period, and
# the run stops early if the requested number is reached first (so the count is within a
# few percent of the request, never much above it).
EVENTS_PER_SESSION = 9.0

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

# A record on its way: (landed at ms, sequence, partition, topic, record, cut) where cut > 0
# truncates the encoded line (a record that is not JSON).
InFlight = tuple[int, int, int, str, dict[str, Any], int]
# A simulated process: emits events, yields how many milliseconds to wait before its next step.
Actor = Iterator[int]

RECORD_CATEGORIES: tuple[str, ...] = ("valid", "duplicate", "conflicting_duplicate", "malformed")

COUNTRIES = ("DE", "FR", "NL", "ES", "IT", "PL", "SE", "GB", "US", "CA")
TIERS = ("bronze", "silver", "gold", "platinum")
CARRIERS = ("dhl", "ups", "postnl", "colissimo")
FAILURE_REASONS = ("card_declined", "insufficient_funds", "expired_card")


# file names carry the first offset in 12 digits (sorting by name sorts by offset): room is
# left above the largest first offset for the records of one log
MAX_FIRST_OFFSET = 10**11


@dataclass(frozen=True)
class GeneratorConfig:
    """Every knob of the generator. Defaults are meant to be realistic for a web shop."""

    seed: int = 42
    events: int = 10_000
    days: float = 7.0
    start: str = "2024-03-01"
    partitions: int = 4
    batches: int = 12
    late_fraction: float = 0.03
    duplicate_fraction: float = 0.01
    conflict_fraction: float = 0.001
    malformed_fraction: float = 0.002
    drift_fraction: float = 0.005
    skewed_producer_fraction: float = 0.05
    max_clock_skew_seconds: float = 90.0
    max_partition_lag_minutes: float = 15.0
    # the benchmark's late data: this fraction of the events of the last `held_back_days`
    # days of the period is held back until just after it ends (the stragglers batch)
    held_back_fraction: float = 0.0
    held_back_days: float = 3.0
    # the offset of each partition's first record: a log that continues another one (the
    # benchmark's fixed batch, appended after histories of other sizes) starts past its offsets
    first_offset: int = 0

    def validate(self) -> None:
        """Refuse settings that cannot make a log, with one line naming the setting."""
        if self.events < 1:
            raise KappaShopError(f"--events must be at least 1 (got {self.events})")
        if self.days <= 0:
            raise KappaShopError(f"--days must be positive (got {self.days})")
        if not 1 <= self.partitions <= 64:
            raise KappaShopError(f"--partitions must be 1..64 (got {self.partitions})")
        if not 1 <= self.batches <= 100_000:
            raise KappaShopError(f"--batches must be 1..100000 (got {self.batches})")
        for name in (
            "late_fraction",
            "duplicate_fraction",
            "conflict_fraction",
            "malformed_fraction",
            "drift_fraction",
            "skewed_producer_fraction",
            "held_back_fraction",
        ):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                option = "--" + name.replace("_", "-")
                raise KappaShopError(f"{option} must be between 0 and 1 (got {value})")
        if not 0 <= self.first_offset <= MAX_FIRST_OFFSET:
            raise KappaShopError(
                f"--first-offset must be 0..{MAX_FIRST_OFFSET} (got {self.first_offset})"
            )
        if self.max_clock_skew_seconds < 0 or self.max_partition_lag_minutes < 0:
            raise KappaShopError("clock skew and partition lag must not be negative")
        if self.held_back_fraction and not 1 / 24 < self.held_back_days <= self.days:
            raise KappaShopError(
                f"--held-back-days must be more than an hour and at most --days "
                f"(got {self.held_back_days})"
            )
        try:
            datetime.strptime(self.start, "%Y-%m-%d")
        except ValueError:
            raise KappaShopError(
                f"--start must be a date YYYY-MM-DD (got {self.start!r})"
            ) from None

    @property
    def start_ms(self) -> int:
        moment = datetime.strptime(self.start, "%Y-%m-%d").replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)

    @property
    def end_ms(self) -> int:
        return self.start_ms + int(self.days * DAY)


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


@dataclass(frozen=True)
class GenerationResult:
    """What a run wrote, for the command line to report."""

    out_dir: Path
    manifest: dict[str, Any]
    seconds: float
    peak_rss_mib: float


class _Writer:
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


class _Delivery:
    """Turns emitted events into delivered records: delay, lateness, partition, redelivery,
    malformation, drift; holds them until they arrive, then hands them to the writer."""

    def __init__(self, config: GeneratorConfig, rng: random.Random, writer: _Writer) -> None:
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


class _Shop:
    """The simulated shop: users, their sessions and orders, inventory and profiles."""

    def __init__(self, config: GeneratorConfig, progress: Callable[[str], None]) -> None:
        self.config = config
        self.progress = progress
        self.rng = random.Random(config.seed)
        self.delivery = _Delivery(config, self.rng, _Writer(Path(), config))
        self.catalog: list[Product] = products()
        self.products_by_category: dict[str, list[Product]] = {}
        for product in self.catalog:
            self.products_by_category.setdefault(product.category, []).append(product)
        self.queries = self._query_vocabulary()
        self.actors: list[tuple[int, int, Actor]] = []
        self.sequence = itertools.count()
        self.lsn = 0
        self.order_number = 0
        self.search_number = 0
        # users: index -> [email version, country, tier, clock skew ms]; live: who can act
        self.users: dict[int, list[Any]] = {}
        self.live_users: list[int] = []
        self.live_position: dict[int, int] = {}
        self.next_user = 1
        self.stock: dict[str, int] = {}
        span_ms = config.end_ms - config.start_ms
        self.session_rate = config.events / EVENTS_PER_SESSION / span_ms  # sessions per ms
        self.hourly_demand = max(1.0, self.session_rate * HOUR * 0.08 * 1.6 / len(self.catalog))
        self.initial_users = min(max(config.events // 80, 8), MAX_USERS * 5 // 6)
        self.stopped = False
        self._current = config.start_ms
        self._last_query = ""

    @property
    def valid_events(self) -> int:
        return sum(counts.valid for counts in self.delivery.counts.values())

    def schedule(self, at_ms: int, actor: Actor) -> None:
        heapq.heappush(self.actors, (at_ms, next(self.sequence), actor))

    def emit(
        self, topic: str, event_type: str, payload: dict[str, Any], at_ms: int, skew_ms: int = 0
    ) -> None:
        self.delivery.emit(topic, event_type, payload, at_ms, skew_ms)

    # -- users and profiles -----------------------------------------------------------------
    def _create_user(self, at_ms: int) -> None:
        rng = self.rng
        index = self.next_user
        self.next_user += 1
        skew = 0
        if rng.random() < self.config.skewed_producer_fraction:
            limit = int(self.config.max_clock_skew_seconds * SECOND)
            skew = rng.randint(-limit, limit)
        state = [0, rng.choice(COUNTRIES), rng.choices(TIERS, (60, 25, 12, 3))[0], skew]
        self.users[index] = state
        self.live_position[index] = len(self.live_users)
        self.live_users.append(index)
        self._profile_event("user_created", index, at_ms)

    def _profile_event(self, event_type: str, index: int, at_ms: int) -> None:
        self.lsn += 1
        user_id = f"u-{index:07d}"
        payload: dict[str, Any] = {"lsn": self.lsn, "user_id": user_id}
        if event_type != "user_deleted":
            version, country, tier, _ = self.users[index]
            suffix = f"+{version}" if version else ""
            payload.update(
                {"email": f"{user_id}{suffix}@example.com", "country": country, "tier": tier}
            )
        self.emit("user_profile_changes", event_type, payload, at_ms)

    def _initial_users(self) -> Actor:
        # the existing customer base, created in the hour before the simulated span
        spacing = max(HOUR // self.initial_users, 1)
        for _ in range(self.initial_users):
            self._create_user(self._clock)
            yield spacing

    def _profile_changes(self) -> Actor:
        rng = self.rng
        span = self.config.end_ms - self.config.start_ms
        signups_per_ms = self.initial_users * 0.2 / span
        updates_per_ms = self.initial_users / (15 * DAY)
        rate = signups_per_ms + updates_per_ms
        while not self.stopped:
            yield max(int(rng.expovariate(rate)), 1)
            now = self._clock
            if rng.random() < signups_per_ms / rate and len(self.users) < MAX_USERS:
                self._create_user(now)
                continue
            if len(self.live_users) < 2:
                continue
            index = self.live_users[rng.randrange(len(self.live_users))]
            if rng.random() < 0.04:
                self._delete_user(index)
                self._profile_event("user_deleted", index, now)
                continue
            state = self.users[index]
            change = rng.random()
            if change < 0.4:
                state[2] = rng.choice(TIERS)
            elif change < 0.7:
                state[1] = rng.choice(COUNTRIES)
            else:
                state[0] += 1
            self._profile_event("user_updated", index, now)

    def _delete_user(self, index: int) -> None:
        position = self.live_position.pop(index)
        last = self.live_users.pop()
        if last != index:
            self.live_users[position] = last
            self.live_position[last] = position

    def _pick_user(self) -> int | None:
        if not self.live_users:
            return None
        # a few users are far more active than most: bias toward the front of the list
        draw = self.rng.random()
        return self.live_users[int(len(self.live_users) * draw * draw)]

    # -- browsing ---------------------------------------------------------------------------
    def _session_arrivals(self) -> Actor:
        rng = self.rng
        while True:
            yield max(int(rng.expovariate(self.session_rate)), 1)
            if self.valid_events >= self.config.events:
                self.stopped = True
                return
            user = self._pick_user()
            if user is not None:
                self.schedule(self._clock, self._session(user))

    def _session(self, index: int) -> Actor:
        rng = self.rng
        user_id = f"u-{index:07d}"
        skew = self.users[index][3]
        views_left = 1 + int(rng.expovariate(1 / 4.5))
        cart: list[dict[str, Any]] = []
        shown: list[str] = []
        current_product: Product | None = None
        page = rng.choice(("/home", "/home", "/home", "/search", "/category/books"))
        while True:
            now = self._clock
            if page.startswith("/product/"):
                current_product = self.catalog[int(page.rsplit("-", 1)[1]) - 1]
            self.emit("web_events", "page_view", {"user_id": user_id, "page_path": page}, now, skew)
            views_left -= 1
            action = rng.random()
            if current_product is not None and action < 0.22:
                yield self._think()
                quantity = rng.choices((1, 2, 3), (80, 15, 5))[0]
                cart.append(
                    {
                        "product_id": current_product.product_id,
                        "quantity": quantity,
                        "unit_price": current_product.unit_price,
                    }
                )
                payload = {"user_id": user_id, **cart[-1]}
                self.emit("web_events", "add_to_cart", payload, self._clock, skew)
            elif action < 0.40:
                yield self._think()
                shown = yield from self._search(user_id, skew)
            if views_left <= 0:
                break
            yield self._think()
            if shown and rng.random() < 0.5:
                position = min(int(rng.expovariate(0.45)), len(shown) - 1)
                product_id = shown[position]
                self.emit(
                    "search_clicks",
                    "search_result_click",
                    {
                        "user_id": user_id,
                        "query": self._last_query,
                        "position": position + 1,
                        "product_id": product_id,
                    },
                    self._clock,
                    skew,
                )
                yield rng.randint(300, 1500)
                page = f"/product/{product_id}"
                shown = []
            else:
                page = self._browse_target()
        if cart and rng.random() < 0.5:
            yield self._think()
            self.schedule(self._clock, self._order(user_id, cart))

    def _search(self, user_id: str, skew: int) -> Generator[int, None, list[str]]:
        """Emit one search; return the product ids it showed (generator: may wait)."""
        rng = self.rng
        query, results = self.queries[rng.randrange(len(self.queries))]
        shown = results[: rng.choice((0, 5, 10, 10, 10))] if results else []
        self.search_number += 1
        self._last_query = query
        self.emit(
            "searches",
            "search",
            {
                "user_id": user_id,
                "search_id": f"s-{self.search_number:09d}",
                "query": query,
                "result_product_ids": list(shown),
            },
            self._clock,
            skew,
        )
        yield rng.randint(2 * SECOND, 20 * SECOND)
        return shown

    def _think(self) -> int:
        """Time to the user's next action: seconds mostly; now and then a pause near the
        session gap (some just under 30 minutes, some just over); rarely none at all."""
        rng = self.rng
        draw = rng.random()
        if draw < 0.01:
            return 0
        if draw < 0.04:
            return rng.randint(25 * MINUTE, 35 * MINUTE)
        return min(int(rng.expovariate(1 / (40 * SECOND))) + 500, 10 * MINUTE)

    def _browse_target(self) -> str:
        rng = self.rng
        draw = rng.random()
        if draw < 0.65:
            return f"/product/{self.catalog[rng.randrange(len(self.catalog))].product_id}"
        if draw < 0.85:
            return f"/category/{rng.choice(sorted(CATEGORIES))}"
        return rng.choice(("/home", "/cart", "/help", "/account"))

    def _query_vocabulary(self) -> list[tuple[str, list[str]]]:
        vocabulary = []
        for category, nouns in sorted(CATEGORIES.items()):
            matching = [product.product_id for product in self.products_by_category[category]]
            for noun in nouns:
                query = noun.lower()
                ranked = sorted(matching, key=functools.partial(_search_rank, query))
                vocabulary.append((query, ranked[:10]))
        vocabulary += [("zzzz", []), ("gift ideas under 5", [])]
        return vocabulary

    # -- orders and inventory ---------------------------------------------------------------
    def _order(self, user_id: str, cart: list[dict[str, Any]]) -> Actor:
        rng = self.rng
        self.order_number += 1
        order_id = f"o-{self.order_number:09d}"
        amount = round(sum(item["quantity"] * item["unit_price"] for item in cart), 2)
        placed = {
            "order_id": order_id,
            "user_id": user_id,
            "items": cart,
            "amount": amount,
            "currency": "EUR",
        }
        self.emit("order_events", "order_placed", placed, self._clock)
        for item in cart:
            self._inventory("reservation", item["product_id"], -item["quantity"], order_id)

        def order_event(event_type: str, **fields: Any) -> None:
            payload = {"order_id": order_id, "user_id": user_id, **fields}
            self.emit("order_events", event_type, payload, self._clock)

        def release() -> None:
            for item in cart:
                self._inventory("release", item["product_id"], item["quantity"], order_id)

        yield rng.randint(5 * SECOND, 60 * SECOND)
        draw = rng.random()
        if draw < 0.03:  # changed their mind before paying
            yield rng.randint(MINUTE, 30 * MINUTE)
            order_event("order_cancelled", reason="customer_request")
            release()
            yield from self._impossible(order_event)
            return
        if draw < 0.045:  # card testing: a burst of declines, then a success within minutes
            for _ in range(rng.randint(3, 5)):
                order_event("payment_failed", amount=amount, reason="card_declined")
                yield rng.randint(10 * SECOND, 90 * SECOND)
        elif draw < 0.12:
            for _ in range(rng.randint(1, 2)):
                order_event("payment_failed", amount=amount, reason=rng.choice(FAILURE_REASONS))
                yield rng.randint(30 * SECOND, 5 * MINUTE)
            if rng.random() < 0.3:
                order_event("order_cancelled", reason="payment_failed")
                release()
                return
        order_event("order_paid", amount=amount)
        yield rng.randint(10 * MINUTE, 36 * HOUR)
        if rng.random() < 0.04:  # cancelled after payment: refunded, stock released
            order_event("order_cancelled", reason="refund_requested")
            release()
            yield from self._impossible(order_event)
            return
        order_event("order_shipped", carrier=rng.choice(CARRIERS))

    def _impossible(self, order_event: Callable[..., None]) -> Actor:
        """Now and then the order service misbehaves after a cancellation (a known bug)."""
        if self.rng.random() < 0.05:
            yield self.rng.randint(MINUTE, HOUR)
            order_event("order_shipped", carrier=self.rng.choice(CARRIERS))

    def _inventory(self, event_type: str, product_id: str, delta: int, order_id: str) -> None:
        self.stock[product_id] = self.stock.get(product_id, 0) + delta
        payload: dict[str, Any] = {"product_id": product_id, "quantity_delta": delta}
        if order_id:
            payload["order_id"] = order_id
        self.emit("inventory_changes", event_type, payload, self._clock + 100)

    def _initial_stock(self) -> Actor:
        for product in self.catalog:
            quantity = int(self.hourly_demand * 12) + self.rng.randint(5, 40)
            self._inventory("restock", product.product_id, quantity, "")
            yield 50

    def _restocking(self) -> Actor:
        rng = self.rng
        while not self.stopped:
            for product in self.catalog:
                if self.stock.get(product.product_id, 0) < self.hourly_demand * 2 + 3 and (
                    rng.random() < 0.5
                ):
                    quantity = int(self.hourly_demand * 12) + rng.randint(10, 60)
                    self._inventory("restock", product.product_id, quantity, "")
            yield HOUR

    @property
    def _clock(self) -> int:
        """The simulation clock: the time of the step being run."""
        return self._current


def _search_rank(query: str, product_id: str) -> int:
    """Where a product ranks among a query's results: a fixed shuffle per query."""
    return zlib.crc32(f"{query}|{product_id}".encode())


def _run_shop(shop: _Shop) -> None:
    """Run the heap loop, keeping the shop's clock at the time of the step being run."""
    config = shop.config
    start = config.start_ms
    shop.schedule(start - HOUR, shop._initial_users())
    shop.schedule(start - 30 * MINUTE, shop._initial_stock())
    shop.schedule(start, shop._session_arrivals())
    shop.schedule(start, shop._profile_changes())
    shop.schedule(start + HOUR, shop._restocking())
    report_every = max(config.events // 20, 1)
    next_report = report_every
    while shop.actors:
        at_ms, _, actor = heapq.heappop(shop.actors)
        if at_ms > config.end_ms:
            continue  # what would happen after the simulated span has not happened yet
        shop._current = at_ms
        shop.delivery.arrive_until(at_ms)
        try:
            wait = next(actor)
        except StopIteration:
            continue
        shop.schedule(at_ms + wait, actor)
        if shop.valid_events >= next_report:
            shop.progress(
                f"  {shop.valid_events:>12,} events generated  "
                f"(event time {format_event_time(at_ms)[:16]})"
            )
            next_report += report_every
    shop.delivery.arrive_all()
    shop.delivery.writer.close()


def generate(
    config: GeneratorConfig, out_dir: Path, progress: Callable[[str], None] = print
) -> GenerationResult:
    """Generate the log for `config` into `out_dir` (which must be empty or not exist)."""
    config.validate()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise KappaShopError(f"{out_dir} is not empty: choose a new directory or remove it")
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    progress(
        f"Generating ~{config.events:,} events (seed {config.seed}, {config.days:g} days from "
        f"{config.start}, {config.batches} arrival batches) into {out_dir}"
    )
    shop = _Shop(config, progress)
    shop.delivery.writer = _Writer(out_dir, config)
    _run_shop(shop)
    manifest = _manifest(config, shop)
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return GenerationResult(out_dir, manifest, time.monotonic() - started, peak_rss_mib)


def _manifest(config: GeneratorConfig, shop: _Shop) -> dict[str, Any]:
    writer = shop.delivery.writer
    by_topic = {}
    for topic, counts in shop.delivery.counts.items():
        entry = asdict(counts)
        entry["by_event_type"] = dict(sorted(counts.by_event_type.items()))
        by_topic[topic] = entry
    totals = {
        name: sum(by_topic[topic][name] for topic in by_topic)
        for name in ("records", "valid", "duplicate", "conflicting_duplicate", "late")
    }
    totals["malformed"] = {
        kind: sum(by_topic[topic]["malformed"][kind] for topic in by_topic)
        for kind in MALFORMED_KINDS
    }
    totals["schema_drift"] = sum(by_topic[topic]["schema_drift"] for topic in by_topic)
    return {
        "format": "kappa_shop event log v1",
        "config": asdict(config),
        "record_categories": list(RECORD_CATEGORIES),
        "malformed_kinds": list(MALFORMED_KINDS),
        "max_record_bytes": MAX_RECORD_BYTES,
        "totals": totals,
        "by_topic": by_topic,
        "lateness_of_late_events": shop.delivery.lateness_buckets,
        "users_created": len(shop.users),
        "orders": shop.order_number,
        "batches": [
            {
                "batch": number,
                "directory": f"batch={number:06d}",
                "files": writer.batch_files[number - 1],
                "records": sum(writer.batch_records[number - 1].values()),
                "records_by_topic": writer.batch_records[number - 1],
                "stragglers_only": number == config.batches + 1,
            }
            for number in range(1, config.batches + 2)
            if number <= config.batches or writer.batch_files[number - 1]
        ],
        "partition_end_offsets": {
            f"{topic}/{partition}": offset
            for (topic, partition), offset in sorted(writer.offsets.items())
        },
    }


def read_manifest(log_dir: Path) -> dict[str, Any]:
    """The manifest of a generated log; a clear error if the directory is not one."""
    path = log_dir / "manifest.json"
    if not path.is_file():
        raise KappaShopError(
            f"{log_dir} has no manifest.json: not a generated log (or its generation did not "
            "finish); run `kappa-shop generate` first"
        )
    return json.loads(path.read_text())
