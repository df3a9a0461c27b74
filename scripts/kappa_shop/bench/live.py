"""`kappa-shop bench --live`: the live service's freshness under a steady load.

A history of --events events is generated, ingested and built (the served version, a full
refresh). Then a second log that continues it (later offsets, event times from where the
history ends, the generator's usual imperfections and lateness) is delivered into the landing
zone at --rate events per second: an arrival batch every INTERVAL seconds of load on average
(each delivered once the records before it, at the rate, have had their time), each file's
arrival (its modification time) the moment its records enter the log. Meanwhile the live
service (kappa_shop.serving.live) runs in this process with a cycle every --every seconds,
for --minutes minutes of delivery and until a cycle that began after the last delivery ends.
Reported: the completion latency of every delivered record (p50, p95, p99, max), the cycles
(how many, their seconds, where they went: ingest, build, the slowest models), the sustained
throughput, the CPU the process used, and its memory over time (start, end, peak, trend). At
the end every model the service kept is compared with a full refresh of the same raw tables:
a figure measured on wrong tables is no figure.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from kappa_shop.bench.checks import check_models, model_grains
from kappa_shop.bench.sampler import tree_cpu_seconds, tree_rss
from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import checkpoint_dir, ingest
from kappa_shop.log.config import GeneratorConfig
from kappa_shop.log.generator import generate, read_manifest
from kappa_shop.log.landing import batch_numbers, deliver
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.serving import live
from kappa_shop.serving.versions import build_served, open_serving, version_schema

HISTORY_DAYS = 7.0
START = "2024-03-01"
# the live log: a day of the shop, cut into an arrival batch per INTERVAL seconds of load; a
# batch is delivered when the records before it, at the rate asked, have taken their time, so
# that the load is steady whatever each batch holds (the simulated day has its quiet hours,
# and its last batch the stragglers that the producers' lag held past the day)
LIVE_DAYS = 1.0
INTERVAL = 2.0
# the live log's partitions start past any offset of the history's
LIVE_FIRST_OFFSET = 1_000_000_000
MEMORY_EVERY = 5.0  # seconds between memory samples
UNTESTED = ("--exclude-resource-type", "test", "unit_test", "--quiet")


@dataclass
class LiveBenchReport:
    history_events: int
    rate: float
    minutes: float
    every: float
    delivered_records: int = 0
    delivery_seconds: float = 0.0
    history_build_seconds: float = 0.0
    cycles: list[dict[str, Any]] = field(default_factory=list)
    latency: dict[str, float] = field(default_factory=dict)
    throughput: float = 0.0
    cpu_cores: float = 0.0
    memory_mib: list[tuple[float, float]] = field(default_factory=list)
    check: str = ""

    @property
    def failed(self) -> bool:
        return not self.check.startswith("equal")

    def memory_trend(self) -> float:
        """Least-squares slope of resident memory, MiB per minute."""
        if len(self.memory_mib) < 3:
            return 0.0
        xs = [t / 60 for t, _ in self.memory_mib]
        ys = [m for _, m in self.memory_mib]
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        spread = sum((x - mean_x) ** 2 for x in xs)
        return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread

    def markdown(self) -> str:
        seconds = [cycle["seconds"] for cycle in self.cycles]
        built = [cycle for cycle in self.cycles if cycle["batches"]]
        models: dict[str, list[float]] = {}
        for cycle in built:
            for name, value in cycle["model_seconds"].items():
                models.setdefault(name, []).append(value)
        slowest = sorted(models.items(), key=lambda item: -statistics.fmean(item[1]))[:5]
        memory = [m for _, m in self.memory_mib]
        lines = [
            f"# Live freshness: {self.rate:g} events/s for {self.minutes:g} min on "
            f"{self.history_events:,} events of history",
            "",
            "| figure | value |",
            "|---|---:|",
            f"| records delivered (arrival batches every {INTERVAL:g} s) | "
            f"{self.delivered_records:,} in {self.delivery_seconds:.0f} s |",
            f"| history: ingest and full build | {self.history_build_seconds:.0f} s |",
            f"| cycles that built (a cycle every {self.every:g} s) | {len(built)} |",
            *(
                f"| completion latency {name} | {self.latency[name]:.1f} s |"
                for name in ("p50", "p95", "p99", "max")
                if name in self.latency
            ),
            f"| cycle seconds: median, max | {statistics.median(seconds):.1f}, {max(seconds):.1f} |"
            if seconds
            else "| cycle seconds | - |",
            f"| of a cycle that built, mean: ingest, build | "
            f"{statistics.fmean(c['ingest_seconds'] for c in built):.1f} s, "
            f"{statistics.fmean(c['build_seconds'] for c in built):.1f} s |"
            if built
            else "| of a cycle | - |",
            f"| sustained throughput | {self.throughput:,.0f} records/s |",
            f"| CPU of the process (2 cores here) | {self.cpu_cores:.2f} cores |",
            f"| memory: start, end, peak | {memory[0]:,.0f}, {memory[-1]:,.0f}, "
            f"{max(memory):,.0f} MiB |"
            if memory
            else "| memory | - |",
            f"| memory trend | {self.memory_trend():+.1f} MiB/min |",
            f"| every model equals a full refresh | {self.check} |",
            "",
            "Slowest models, mean seconds per cycle that built: "
            + ", ".join(f"{name} {statistics.fmean(values):.1f}" for name, values in slowest),
        ]
        return "\n".join(lines) + "\n"


def run_live_bench(
    project: DbtProject,
    history_events: int,
    rate: float,
    minutes: float,
    work_dir: Path,
    every: float = 5.0,
    seed: int = 7,
    say: Callable[[str], None] = print,
) -> LiveBenchReport:
    if rate <= 0 or minutes <= 0 or history_events < 1_000:
        raise KappaShopError(
            "bench --live needs --rate and --minutes above 0 and --events of at least 1000"
        )
    if project.output.get("method") != "session":
        raise KappaShopError("bench --live runs on an embedded-Spark target (method: session)")
    report = LiveBenchReport(history_events, rate, minutes, every)
    warehouse = project.warehouse()
    # from nothing: the schema's, its versions', raw and comparison schemas, and ingestion's
    # checkpoint of the raw schema
    for row in warehouse.sql(f"show schemas like '{project.schema}*'"):
        warehouse.sql(f"drop schema {row['namespace']} cascade")
    shutil.rmtree(checkpoint_dir(warehouse, project.raw_schema), ignore_errors=True)
    landing = work_dir / f"live-landing-{rate:g}-{minutes:g}"
    history_log = work_dir / f"live-history-{history_events}-{seed}"
    live_log = work_dir / f"live-log-{rate:g}-{minutes:g}-{seed}"
    live_batches = max(1, round(minutes * 60 / INTERVAL))
    for log_dir, config in (
        (history_log, GeneratorConfig(seed=seed, events=history_events, days=HISTORY_DAYS,
                                      start=START, batches=4)),
        (live_log, GeneratorConfig(seed=seed + 1, events=max(1, round(rate * minutes * 60)),
                                   days=LIVE_DAYS,
                                   start=(date.fromisoformat(START)
                                          + timedelta(days=HISTORY_DAYS)).isoformat(),
                                   batches=live_batches, first_offset=LIVE_FIRST_OFFSET)),
    ):  # fmt: skip
        if not (log_dir / "manifest.json").exists():
            say(f"bench --live: generating {config.events:,} events into {log_dir} ...")
            generate(config, log_dir, progress=lambda _line: None)
    if landing.exists():
        shutil.rmtree(landing)
    landing.mkdir(parents=True)

    spark = project.spark()
    started = time.monotonic()
    deliver(history_log, landing, batch_numbers(history_log))
    ingest(spark, landing, project.raw_schema, progress=lambda _line: None, warehouse=warehouse)
    build_served(project, UNTESTED, progress=say)
    report.history_build_seconds = time.monotonic() - started
    say(f"bench --live: history built in {report.history_build_seconds:.0f} s")
    # the history's cycle: its batches accounted for, not timed (they were not live)
    live.ensure_tables(warehouse, project.raw_schema)
    received = live.received_through(warehouse, project.raw_schema)
    now = _now()
    history = live.Cycle(0, now, now, 1, received, 0, 0.0, 0.0, None)
    live.record_cycle(warehouse, project.raw_schema, history, {})

    # the load: an arrival batch every INTERVAL seconds, from a thread
    batches = batch_numbers(live_log)
    delivered = threading.Event()
    delivered_wall: list[datetime] = []
    stop = live.StopRequest()
    memory: list[tuple[float, float]] = []
    pid = os.getpid()
    load_started = time.monotonic()

    sizes = {entry["batch"]: int(entry["records"]) for entry in read_manifest(live_log)["batches"]}

    def load() -> None:
        before = 0
        for number in batches:
            time.sleep(max(0.0, load_started + before / rate - time.monotonic()))
            deliver(live_log, landing, [number])
            before += sizes[number]
        report.delivery_seconds = time.monotonic() - load_started
        delivered_wall.append(_now())
        delivered.set()

    def sample() -> None:
        while not stop.event.is_set():
            memory.append((time.monotonic() - load_started, tree_rss(pid) / 2**20))
            stop.event.wait(MEMORY_EVERY)

    def said(line: str) -> None:
        say(line)
        # the first cycle that began after the last delivery has ended: everything is built
        if line.startswith("live: cycle") and delivered.is_set() and finished_after():
            stop.event.set()

    def finished_after() -> bool:
        last = live.recorded_cycles(warehouse, project.raw_schema, last=1)
        return bool(last) and last[-1].started_at >= delivered_wall[0]

    cpu_before = tree_cpu_seconds(pid)
    threads = [
        threading.Thread(target=load, daemon=True),
        threading.Thread(target=sample, daemon=True),
    ]
    for thread in threads:
        thread.start()
    cycles_seen = live.run_live(project, landing, every=every, tests_every=0, say=said, stop=stop)
    elapsed = time.monotonic() - load_started
    report.cpu_cores = (tree_cpu_seconds(pid) - cpu_before) / elapsed
    report.memory_mib = memory
    built = [cycle for cycle in cycles_seen if cycle.batches]
    histogram: dict[int, int] = {}
    for cycle in built:
        for tick, count in cycle.histogram.items():
            histogram[tick] = histogram.get(tick, 0) + count
    report.latency = live.percentiles(histogram)
    report.delivered_records = sum(cycle.records for cycle in built)
    report.throughput = report.delivered_records / elapsed
    report.cycles = [
        {
            "number": cycle.number,
            "seconds": (cycle.ended_at - cycle.started_at).total_seconds(),
            "batches": cycle.batches,
            "records": cycle.records,
            "ingest_seconds": cycle.ingest_seconds,
            "build_seconds": cycle.build_seconds,
            "model_seconds": cycle.model_seconds,
            "latency": cycle.latency,
            "error": cycle.error,
        }
        for cycle in cycles_seen
        if cycle.batches or cycle.error
    ]
    # every model against a full refresh of the same raw tables
    say("bench --live: comparing every model with a full refresh ...")
    full = project.elsewhere(f"{project.schema}_full", project.raw_schema)
    result = full.invoke("run", "--full-refresh", "--quiet")
    grains = model_grains(result)
    served = open_serving(warehouse, project.schema).served
    report.check = check_models(
        warehouse, grains, version_schema(project.schema, served or 1), f"{project.schema}_full"
    )
    return report


def _now() -> datetime:
    """Now, in UTC, as the cycles table keeps it (without a zone)."""
    return datetime.now(UTC).replace(tzinfo=None)


def write_live_results(report: LiveBenchReport, work_dir: Path) -> list[Path]:
    stem = work_dir / f"bench-live-{report.rate:g}-{report.minutes:g}"
    markdown = stem.with_suffix(".md")
    markdown.write_text(report.markdown())
    data = stem.with_suffix(".json")
    data.write_text(json.dumps(asdict(report), indent=1, default=str))
    return [markdown, data]
