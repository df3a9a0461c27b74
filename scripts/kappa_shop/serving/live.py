"""The live half of Kappa (`kappa-shop live`): one long-running process, one SparkSession, dbt
invoked in it, looping until it is stopped. Each cycle ingests what the log holds (a landing
zone or Kafka's topics, the same exactly-once ingestion as `kappa-shop ingest`), builds the
served version of every model the new batches reach (`dbt build` without its tests: a model
with nothing new sends no statement), runs the data tests every few cycles, records the cycle
and prints one line. The same code keeps the models fresh and rebuilds them from the log
(`kappa-shop reprocess`), and every late event is still exact: the contract's, the proof's.

Freshness is a record's completion latency: from the moment it entered the log (the broker's
timestamp of a Kafka record; a landed file's modification time) to the end of the cycle that
wrote every model it reaches. A cycle accounts for the batches ingested since the last cycle
that completed, so a batch a killed cycle ingested is counted, late, by the next.

A cycle also measures, at its end, the log's lag before ingestion: the records the log holds
that no ingestion batch has taken yet (kappa_shop.ingest.lag), which the next cycle takes.

Cycles are recorded in the raw schema beside the log: `kappa_live_cycles` (one row per
cycle) and `kappa_live_latency` (per cycle, how many records completed within each tenth of a
second), which `kappa-shop live --status` reads. While the service runs it holds a lock file
in the warehouse (`_live/<raw schema>.lock`, with its process id and start): a second service
on the same log is refused, and a killed one's lock is free at once (the system releases it).

Stopping: SIGTERM or Ctrl-C ends the loop at the next safe point (the current step done) with
one line; a second Ctrl-C stops at once. A SIGKILL at any moment is repaired by the next start:
ingestion's checkpoint and the contract's ledger and run lock (the next build redoes what the
killed one did not commit), nothing lost or doubled.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import (
    BATCH_LOG_TABLE,
    KafkaSource,
    checkpoint_dir,
    ensure_raw_tables,
    ingest,
)
from kappa_shop.ingest.lag import LogLag, kafka_lag, landing_lag
from kappa_shop.ingest.landed_files import local_path
from kappa_shop.log.format import TOPICS
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.warehouse import (
    Warehouse,
    clear_unfinished_writes,
    columns,
    table_names,
    warehouse_dir,
)
from kappa_shop.serving import compaction
from kappa_shop.serving.versions import build_served, open_serving

CYCLES_TABLE = "kappa_live_cycles"
LATENCY_TABLE = "kappa_live_latency"
# the service's own tables, which it alone writes (and compacts)
OWN_TABLES = (CYCLES_TABLE, LATENCY_TABLE)
# the latency histogram's resolution: tenths of a second
TICKS_PER_SECOND = 10
PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


@dataclass
class Cycle:
    """One cycle of the service, as recorded."""

    number: int
    started_at: datetime
    ended_at: datetime
    first_batch_id: int | None  # the batches it made visible (None: nothing new)
    last_batch_id: int | None
    records: int
    ingest_seconds: float
    build_seconds: float
    tests_seconds: float | None  # None: no tests this cycle
    model_seconds: dict[str, float] = field(default_factory=dict)
    latency: dict[str, float] = field(default_factory=dict)  # p50, p95, p99, max (seconds)
    error: str | None = None
    untimed: int = 0  # records whose time in the log is unknown (their landed file removed)
    # the records the log held at the cycle's end that no ingestion batch had taken (None: not
    # measured, the source not answering)
    lag_records: int | None = None
    # its records' completion latencies, in ticks: how many records completed within each
    histogram: dict[int, int] = field(default_factory=dict, repr=False)

    @property
    def batches(self) -> int:
        if self.first_batch_id is None or self.last_batch_id is None:
            return 0
        return self.last_batch_id - self.first_batch_id + 1

    def line(self) -> str:
        """The cycle's one line."""
        seconds = (self.ended_at - self.started_at).total_seconds()
        said = f"live: cycle {self.number} ({seconds:.1f} s): "
        if self.error and not self.batches:
            return said + f"failed: {self.error}"
        if not self.batches:
            return said + "nothing new"
        said += (
            f"{self.batches} batch(es) {self.first_batch_id}..{self.last_batch_id}, "
            f"{self.records:,} records; ingest {self.ingest_seconds:.1f} s, "
            f"build {self.build_seconds:.1f} s"
        )
        slowest = sorted(self.model_seconds.items(), key=lambda item: -item[1])[:3]
        if slowest:
            said += " (" + ", ".join(f"{name} {value:.1f} s" for name, value in slowest) + ")"
        if self.tests_seconds is not None:
            said += f", tests {self.tests_seconds:.1f} s"
        if self.latency:
            said += "; latency " + ", ".join(
                f"{name} {self.latency[name]:.1f} s" for name in ("p50", "p99", "max")
            )
        if self.untimed:
            said += f" ({self.untimed:,} records untimed: their landed files were removed)"
        if self.lag_records is not None:
            said += f"; log lag {self.lag_records:,} records"
        if self.error:
            said += f"; {self.error}"
        return said


def percentiles(histogram: dict[int, int]) -> dict[str, float]:
    """p50, p95, p99 and max (seconds) of a histogram of latencies in ticks (nearest rank)."""
    total = sum(histogram.values())
    if not total:
        return {}
    ordered = sorted(histogram.items())
    found: dict[str, float] = {}
    for name, quantile in PERCENTILES:
        rank, seen = max(1, math.ceil(quantile * total)), 0
        for tick, count in ordered:
            seen += count
            if seen >= rank:
                found[name] = tick / TICKS_PER_SECOND
                break
    found["max"] = ordered[-1][0] / TICKS_PER_SECOND
    return found


def ensure_tables(warehouse: Warehouse, raw_schema: str) -> None:
    warehouse.sql(
        f"create table if not exists {raw_schema}.{CYCLES_TABLE} ("
        " cycle bigint, started_at timestamp, ended_at timestamp, first_batch_id bigint,"
        " last_batch_id bigint, records bigint, ingest_seconds double, build_seconds double,"
        " tests_seconds double, model_seconds map<string, double>, latency map<string, double>,"
        " error string, untimed_records bigint, lag_records bigint) using parquet"
    )
    described, _ = columns(warehouse, f"{raw_schema}.{CYCLES_TABLE}")
    if "lag_records" not in {name for name, _ in described}:
        # (recorded by a service before the lag was measured: the column added, in place)
        warehouse.sql(f"alter table {raw_schema}.{CYCLES_TABLE} add columns (lag_records bigint)")
    warehouse.sql(
        f"create table if not exists {raw_schema}.{LATENCY_TABLE} ("
        " cycle bigint, latency_ticks bigint, records bigint) using parquet"
    )


def recorded_cycles(warehouse: Warehouse, raw_schema: str, last: int | None = None) -> list[Cycle]:
    """The recorded cycles, oldest first (the last `last` of them)."""
    limit = f"order by cycle desc limit {last}" if last else "order by cycle desc"
    rows = warehouse.sql(f"select * from {raw_schema}.{CYCLES_TABLE} {limit}")
    return [
        Cycle(
            number=int(row["cycle"]),
            started_at=row["started_at"],
            ended_at=row["ended_at"],
            first_batch_id=row["first_batch_id"],
            last_batch_id=row["last_batch_id"],
            records=int(row["records"] or 0),
            ingest_seconds=float(row["ingest_seconds"] or 0.0),
            build_seconds=float(row["build_seconds"] or 0.0),
            tests_seconds=row["tests_seconds"],
            model_seconds=dict(row["model_seconds"] or {}),
            latency=dict(row["latency"] or {}),
            error=row["error"],
            untimed=int(row["untimed_records"] or 0),
            lag_records=None if row["lag_records"] is None else int(row["lag_records"]),
        )
        for row in reversed(rows)
    ]


def _sql_text(value: str | None) -> str:
    if value is None:
        return "null"
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_map(values: dict[str, float]) -> str:
    if not values:
        return "cast(map() as map<string, double>)"
    pairs = ", ".join(
        f"{_sql_text(key)}, cast({value!r} as double)" for key, value in values.items()
    )
    return f"map({pairs})"


def record_cycle(
    warehouse: Warehouse, raw_schema: str, cycle: Cycle, histogram: dict[int, int]
) -> None:
    """Append the cycle's row and its latency histogram (the histogram first: a cycle row is
    written last, so a recorded cycle always has its latencies)."""
    if histogram:
        values = ", ".join(
            f"({cycle.number}, {tick}, {count})" for tick, count in sorted(histogram.items())
        )
        warehouse.sql(f"insert into {raw_schema}.{LATENCY_TABLE} values {values}")

    def number(value: int | float | None) -> str:
        return "null" if value is None else repr(value)

    warehouse.sql(
        f"insert into {raw_schema}.{CYCLES_TABLE} values ("
        f"{cycle.number}, timestamp'{cycle.started_at:%Y-%m-%d %H:%M:%S.%f}', "
        f"timestamp'{cycle.ended_at:%Y-%m-%d %H:%M:%S.%f}', {number(cycle.first_batch_id)}, "
        f"{number(cycle.last_batch_id)}, {cycle.records}, {cycle.ingest_seconds!r}, "
        f"{cycle.build_seconds!r}, {number(cycle.tests_seconds)}, "
        f"{_sql_map(cycle.model_seconds)}, {_sql_map(cycle.latency)}, {_sql_text(cycle.error)}, "
        f"{cycle.untimed}, {number(cycle.lag_records)})"
    )


def received_through(warehouse: Warehouse, raw_schema: str) -> int:
    """The last ingestion batch with a receipt (0: none)."""
    rows = warehouse.sql(
        f"select coalesce(max(ingestion_batch_id), 0) as last from {raw_schema}.{BATCH_LOG_TABLE}"
    )
    return int(rows[0]["last"])


def check_records(project: DbtProject) -> list[str]:
    """What the service's own records say went wrong after kills (empty: nothing): a cycle
    recorded twice, an ingestion batch accounted for by two cycles or by none (once a cycle
    has run since it was ingested), a cycle whose latency histogram does not hold its timed
    records."""
    warehouse, raw = project.warehouse(), project.raw_schema
    cycles, latency = f"{raw}.{CYCLES_TABLE}", f"{raw}.{LATENCY_TABLE}"
    problems = [
        f"cycle {row['cycle']} recorded {row['times']} times"
        for row in warehouse.sql(
            f"select cycle, count(*) as times from {cycles} group by cycle having count(*) > 1"
            " order by cycle"
        )
    ]
    owners: dict[int, list[int]] = {}  # ingestion batch: the cycles that accounted for it
    for row in warehouse.sql(
        f"select distinct cycle, first_batch_id, last_batch_id from {cycles}"
        " where last_batch_id is not null order by cycle"
    ):
        for batch in range(int(row["first_batch_id"]), int(row["last_batch_id"]) + 1):
            owners.setdefault(batch, []).append(int(row["cycle"]))
    problems += [
        f"ingestion batch {batch} accounted for by cycles {' and '.join(map(str, owners[batch]))}"
        for batch in sorted(owners)
        if len(owners[batch]) > 1
    ]
    accounted = max(owners, default=0)
    never = [batch for batch in range(1, accounted + 1) if batch not in owners]
    for _, run in itertools.groupby(enumerate(never), key=lambda item: item[1] - item[0]):
        batches = [batch for _, batch in run]
        problems.append(
            f"ingestion batch(es) {batches[0]}..{batches[-1]} accounted for by no cycle"
        )
    received = received_through(warehouse, raw)
    latest = recorded_cycles(warehouse, raw, last=1)
    if owners and received > accounted and not latest[-1].error:  # (a failed one: the next's)
        problems.append(f"ingestion batch(es) {accounted + 1}..{received} built by no cycle")
    problems += [
        f"cycle {row['cycle']}: {row['timed']} records timed, its latencies hold {row['held']}"
        for row in warehouse.sql(
            "select c.cycle, c.records - coalesce(c.untimed_records, 0) as timed,"
            " coalesce(l.held, 0) as held"
            f" from (select distinct cycle, records, untimed_records from {cycles}) c"
            f" left join (select cycle, sum(records) as held from {latency} group by cycle) l"
            " on c.cycle = l.cycle"
            " where c.records - coalesce(c.untimed_records, 0) != coalesce(l.held, 0)"
            " order by c.cycle"
        )
    ]
    return problems


def _log_times(
    warehouse: Warehouse, raw_schema: str, first: int, last: int, source: Path | KafkaSource
) -> tuple[dict[float, int], int]:
    """When the records of batches first..last entered the log (epoch seconds), with how many
    records entered at each: the broker's timestamps of Kafka records; the modification times
    of landed files. And how many records could not be timed (their landed file removed
    since)."""
    between = f"_ingestion_batch_id between {first} and {last}"
    tables = [f"{raw_schema}.{topic.raw_table}" for topic in TOPICS]
    if isinstance(source, KafkaSource):
        union = " union all ".join(
            "select unix_micros(to_timestamp(get_json_object(raw_record, '$.timestamp')))"
            f" / 1e6 as entered from {table} where {between}"
            for table in tables
        )
        rows = warehouse.sql(f"select entered, count(*) as records from ({union}) group by entered")
        return {float(row["entered"]): int(row["records"]) for row in rows}, 0
    union = " union all ".join(
        f"select _source_file from {table} where {between}" for table in tables
    )
    rows = warehouse.sql(
        f"select _source_file, count(*) as records from ({union}) group by _source_file"
    )
    times: dict[float, int] = {}
    untimed = 0
    for row in rows:
        # (a landed file's name, relative to the landing zone)
        path = source / local_path(str(row["_source_file"]))
        if not path.exists():
            untimed += int(row["records"])  # removed since: counted, not timed
            continue
        entered = path.stat().st_mtime
        times[entered] = times.get(entered, 0) + int(row["records"])
    return times, untimed


def log_lag(project: DbtProject, source: Path | KafkaSource) -> LogLag:
    """What the log holds that ingestion has not taken yet (kappa_shop.ingest.lag)."""
    query = checkpoint_dir(project.warehouse(), project.raw_schema) / "query"
    if isinstance(source, KafkaSource):
        return kafka_lag(project.spark(), source, query)
    return landing_lag(source, query)


def latency_histogram(log_times: dict[float, int], completed: datetime) -> dict[int, int]:
    """Completion latencies, in ticks, of records that entered the log at `log_times`."""
    end = completed.timestamp()
    histogram: dict[int, int] = {}
    for entered, count in log_times.items():
        tick = max(0, int((end - entered) * TICKS_PER_SECOND))
        histogram[tick] = histogram.get(tick, 0) + count
    return histogram


def service_lock_path(project: DbtProject) -> Path:
    return warehouse_dir(project.warehouse()) / "_live" / f"{project.raw_schema}.lock"


@contextmanager
def _service_lock(project: DbtProject, source: str) -> Iterator[None]:
    """Hold the service's lock file while the loop runs; refuse a second service on the log."""
    path = service_lock_path(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise KappaShopError(
            f"a live service already runs on {project.raw_schema} ({holder}): stop it first "
            "(SIGTERM), or see `kappa-shop live --status`"
        ) from None
    handle.seek(0)
    handle.truncate()
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    handle.write(json.dumps({"pid": os.getpid(), "started": started, "source": source}))
    handle.flush()
    try:
        yield
    finally:
        handle.close()  # releases the lock (as a killed process's end does)


def service_running(project: DbtProject) -> dict[str, Any] | None:
    """The running service's pid, start and source, or None when none runs."""
    path = service_lock_path(project)
    if not path.exists():
        return None
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read().strip()
            return json.loads(text) if text else {}
        return None


class StopRequest:
    """SIGTERM or Ctrl-C, asked for while the loop runs: the loop ends at its next safe point.
    A second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason = ""

    def __call__(self, signum: int, _frame: Any) -> None:
        self.reason = signal.Signals(signum).name
        self.event.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    @contextmanager
    def installed(self) -> Iterator[StopRequest]:
        if threading.current_thread() is not threading.main_thread():
            yield self  # signals reach the main thread only: a caller's event stops the loop
            return
        before = {sig: signal.signal(sig, self) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield self
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


def run_live(
    project: DbtProject,
    source: Path | KafkaSource,
    every: float = 10.0,
    cycles: int | None = None,
    tests_every: int = 10,
    select: Sequence[str] = (),
    say: Callable[[str], None] = print,
    stop: StopRequest | None = None,
    extra_jars: Sequence[Path] = (),
    compact_after: int = compaction.DEFAULT_LIMIT,
) -> list[Cycle]:
    """Loop until stopped (or for `cycles` cycles): ingest, build what the new batches reach,
    every `tests_every`-th cycle with new data run the data tests, record and say the cycle.
    A cycle starts every `every` seconds; one that overruns is followed at once by the next,
    which takes everything new (backpressure). At its start and after each recorded cycle,
    the service's own tables are compacted when one holds more than `compact_after` data files
    (0: never; kappa_shop.serving.compaction). Returns the cycles it ran."""
    if every < 0 or (cycles is not None and cycles < 1) or tests_every < 0:
        raise KappaShopError("--every and --tests-every must be 0 or more, --cycles at least 1")
    shown = source.describe() if isinstance(source, KafkaSource) else str(source)
    project.spark(extra_jars=extra_jars)  # started here, with the jars ingestion needs
    warehouse = project.warehouse()
    stop = stop or StopRequest()
    ran: list[Cycle] = []
    with _service_lock(project, shown), stop.installed():
        ensure_raw_tables(warehouse, project.raw_schema)
        # a compaction a killed service left half done, finished or undone first (its table
        # may be missing, its rows in the copy: not to be created empty below)
        for line in compaction.repair(warehouse, project.raw_schema, OWN_TABLES):
            say(f"live: {line}")
        ensure_tables(warehouse, project.raw_schema)
        # what a killed service left unfinished in its own tables' appends (its rows would be
        # merged in with the next: SPARK-29037); this service is their one writer
        clear_unfinished_writes(warehouse, project.raw_schema, list(OWN_TABLES))
        done = recorded_cycles(warehouse, project.raw_schema, last=1)
        number = done[-1].number if done else 0
        # the batches the recorded cycles made visible; a later one (ingested by a cycle killed
        # before its record) is accounted for by the next cycle
        accounted = _last_accounted(warehouse, project.raw_schema)
        say(
            f"live: {shown} -> {project.schema} (raw {project.raw_schema}), a cycle every "
            f"{every:g} s, "
            + (
                f"data tests every {tests_every} cycle(s) that built"
                if tests_every
                else "no data tests"
            )
            + "; "
            f"{'going on from cycle ' + str(number) if number else 'first cycle'}"
        )
        # (a service restarted often compacts at its start as well as after its cycles)
        for line in compaction.compact_when_due(
            warehouse, project.raw_schema, OWN_TABLES, compact_after
        ):
            say(f"live: {line}")
        due = time.monotonic()
        idle_said = False
        failing = None  # the error the last failed cycle said
        failed: list[Cycle] = []  # the failed cycles since the last that did not fail
        while not stop.event.is_set() and (cycles is None or len(ran) < cycles):
            cycle = _cycle(project, source, number + 1, accounted, tests_every, select, stop, say)
            ran.append(cycle)
            if cycle.error and not cycle.batches:
                failed.append(cycle)
            elif failed:  # (a broker back: the service says it goes on, and since when)
                say(
                    f"live: going on after {len(failed)} failed cycle(s) since "
                    f"{failed[0].started_at:%H:%M:%S} UTC ({failed[-1].error})"
                )
                failed = []
            if cycle.batches or (cycle.error and cycle.error != failing):
                # a cycle that built or failed is recorded and said; one that found nothing new
                # is neither (a service idles for hours), but the first of a quiet spell says so,
                # and a failure the cycle before said already (a broker away for an hour) is
                # not said again until it changes or ends
                number = cycle.number
                record_cycle(warehouse, project.raw_schema, cycle, cycle.histogram)
                accounted = cycle.last_batch_id or accounted
                say(cycle.line())
                for line in compaction.compact_when_due(
                    warehouse, project.raw_schema, OWN_TABLES, compact_after
                ):
                    say(f"live: {line}")
                idle_said = False
                failing = cycle.error if not cycle.batches else None
            elif cycle.error:
                pass  # the same failure again: said once, when it began
            elif not idle_said:
                failing = None
                say(
                    f"live: up to date through ingestion batch {accounted}; waiting for new records"
                )
                idle_said = True
            due += every
            wait = due - time.monotonic()
            if wait <= 0:
                due = time.monotonic()  # overran: the next cycle starts now, with all that is new
            elif cycles is None or len(ran) < cycles:
                stop.event.wait(wait)
        if stop.event.is_set():
            say(f"live: stopped ({stop.reason or 'asked'}) after cycle {number}, at a safe point")
    return ran


def _cycle(
    project: DbtProject,
    source: Path | KafkaSource,
    number: int,
    accounted: int,
    tests_every: int,
    select: Sequence[str],
    stop: StopRequest,
    say: Callable[[str], None],
) -> Cycle:
    """One cycle: ingest; when batches beyond `accounted` have receipts, build what they reach
    and time their records; every `tests_every`-th cycle that built (counting the recorded
    ones), run the data tests. An error of ours (a broker away, a failed build) is the cycle's
    error: the next cycle tries again, the contract making a rerun safe."""
    warehouse = project.warehouse()
    started = datetime.now(UTC).replace(tzinfo=None)
    clock = time.monotonic()
    cycle = Cycle(number, started, started, None, None, 0, 0.0, 0.0, None)
    try:
        ingest(project.spark(), source, project.raw_schema, progress=lambda _line: None,
               warehouse=warehouse)  # fmt: skip
        cycle.ingest_seconds = time.monotonic() - clock
        received = received_through(warehouse, project.raw_schema)
        if received > accounted and not stop.event.is_set():
            clock = time.monotonic()
            untested = ("--exclude-resource-type", "test", "unit_test", "--quiet")
            result = build_served(project, (*untested, *_selection(select)), progress=say)
            cycle.build_seconds = time.monotonic() - clock
            cycle.ended_at = datetime.now(UTC).replace(tzinfo=None)
            cycle.model_seconds = {
                item.node.name: round(float(item.execution_time), 3)
                for item in result.results
                if item.node.resource_type == "model"
            }
            cycle.first_batch_id, cycle.last_batch_id = accounted + 1, received
            times, cycle.untimed = _log_times(
                warehouse, project.raw_schema, accounted + 1, received, source
            )
            cycle.records = sum(times.values()) + cycle.untimed
            cycle.histogram = latency_histogram(times, cycle.ended_at.replace(tzinfo=UTC))
            cycle.latency = percentiles(cycle.histogram)
            built = _built_cycles(warehouse, project.raw_schema) + 1
            if tests_every and built % tests_every == 0 and not stop.event.is_set():
                clock = time.monotonic()
                try:
                    _run_tests(project, select)
                except KappaShopError as failed:
                    # the models are built and served: their tests' failure is said, not undone
                    cycle.error = "data tests failed: " + str(failed).splitlines()[0]
                cycle.tests_seconds = time.monotonic() - clock
            cycle.lag_records = _lag_records(project, source)
    except KappaShopError as error:
        cycle.error = str(error).splitlines()[0] if str(error) else repr(error)
    if cycle.ended_at == started:
        cycle.ended_at = datetime.now(UTC).replace(tzinfo=None)
    return cycle


def _lag_records(project: DbtProject, source: Path | KafkaSource) -> int | None:
    """The log's lag at a cycle's end, in records; None when it cannot be read (a broker gone
    since the cycle ingested: the next cycle says so)."""
    from py4j.protocol import Py4JError

    try:
        return log_lag(project, source).records
    except (KappaShopError, OSError, ValueError, Py4JError):  # (a Kafka client's, via py4j)
        return None


def _built_cycles(warehouse: Warehouse, raw_schema: str) -> int:
    """How many recorded cycles built new batches."""
    rows = warehouse.sql(
        f"select count(*) as built from {raw_schema}.{CYCLES_TABLE} where last_batch_id is not null"
    )
    return int(rows[0]["built"])


def _last_accounted(warehouse: Warehouse, raw_schema: str) -> int:
    rows = warehouse.sql(
        f"select coalesce(max(last_batch_id), 0) as last from {raw_schema}.{CYCLES_TABLE}"
    )
    return int(rows[0]["last"])


def _selection(select: Sequence[str]) -> tuple[str, ...]:
    return ("--select", *select) if select else ()


def _run_tests(project: DbtProject, select: Sequence[str]) -> None:
    """The data tests of the served version (of the selected models)."""
    served = open_serving(project.warehouse(), project.schema).served
    if served is None:
        return
    destination = project.destination.at_version(served)
    # of a selection, the tests whose every parent is selected (a test that also reads a model
    # the service does not keep would read a table that is not there)
    narrowed = ("--indirect-selection", "cautious", *_selection(select)) if select else ()
    project.to(destination).invoke("test", "--exclude-resource-type", "unit_test", "--quiet",
                                   *narrowed)  # fmt: skip


def status(project: DbtProject, last: int = 10) -> str:
    """`kappa-shop live --status`: whether the service runs, its last cycles, the completion
    latency of the records of the last hour, and what the log holds beyond the last cycle."""
    warehouse = project.warehouse()
    running = service_running(project)
    lines = [
        f"live on {project.raw_schema}: "
        + (
            f"running (pid {running.get('pid')}, since {running.get('started')}, "
            f"{running.get('source')})"
            if running is not None
            else "not running"
        )
    ]
    if CYCLES_TABLE not in table_names(warehouse, project.raw_schema):  # (none: no schema yet)
        return "\n".join([*lines, "no cycle recorded yet"])
    cycles = recorded_cycles(warehouse, project.raw_schema, last=last)
    lines += [cycle.line() for cycle in cycles]
    rows = warehouse.sql(
        f"select latency_ticks, sum(records) as records from {project.raw_schema}.{LATENCY_TABLE}"
        f" where cycle in (select cycle from {project.raw_schema}.{CYCLES_TABLE}"
        "  where ended_at >= current_timestamp() - interval 1 hour)"
        " group by latency_ticks"
    )
    histogram = {int(row["latency_ticks"]): int(row["records"]) for row in rows}
    found = percentiles(histogram)
    if found:
        lines.append(
            f"completion latency, last hour ({sum(histogram.values()):,} records): "
            + ", ".join(f"{name} {found[name]:.1f} s" for name in ("p50", "p95", "p99", "max"))
        )
    accounted = _last_accounted(warehouse, project.raw_schema)
    received = received_through(warehouse, project.raw_schema)
    lines.append(
        f"ingested through batch {received}; models built through batch {accounted}"
        + (f" ({received - accounted} batch(es) waiting)" if received > accounted else "")
    )
    landing = _bound_landing(project)
    if landing is not None:  # measured now
        lag = landing_lag(landing, checkpoint_dir(warehouse, project.raw_schema) / "query")
        lines.append(f"not yet ingested: {lag.describe(time.time())}")
    elif cycles and cycles[-1].lag_records is not None:  # Kafka's: as the last cycle found it
        lines.append(
            f"not yet ingested at the end of cycle {cycles[-1].number}: "
            f"{cycles[-1].lag_records:,} records"
        )
    return "\n".join(lines)


def _bound_landing(project: DbtProject) -> Path | None:
    """The landing zone the raw schema is ingested from (the checkpoint is bound to it), None
    for Kafka or when nothing was ingested yet."""
    marker = checkpoint_dir(project.warehouse(), project.raw_schema) / "landing_dir.txt"
    bound = marker.read_text().strip() if marker.is_file() else ""
    return Path(bound) if bound.startswith("/") else None
