"""`kappa-shop bench --live`: the live service's freshness under a steady load.

A history of --events events is generated and landed; then `kappa-shop live` starts as a user
starts it (a process of its own: its Spark, dbt in it), and its first cycle ingests and builds
the history (every model's first build). Then a second log that continues it (later offsets,
event times from where the history ends, the generator's usual imperfections and lateness) is
delivered into the landing zone at --rate events per second: an arrival batch every INTERVAL
seconds of load on average (each delivered once the records before it, at the rate, have had
their time), each file's arrival (its modification time) the moment its records enter the log.
This process only delivers the load, samples the service's CPU and memory (its process tree),
and, with --kills K, kills the service with SIGKILL (its whole process group, Spark's JVM
included) at K moments drawn uniform over the load and starts it again at once, as a supervisor
would. Once the load is delivered and a cycle that began after it has ended, the service is
stopped with SIGTERM (at a safe point).

Every figure is then read from the service's own records (`kappa_live_cycles`,
`kappa_live_latency`; the batches a killed cycle ingested are counted, late, by the next cycle
that completes, so a kill's cost is in the latencies) by a worker process (bench.live_worker:
the embedded metastore admits one process at a time), which also checks those records (no
cycle twice, no ingestion batch twice or never), counts every landed record in its raw table
(exactly once), and compares every model the service kept with a full refresh of the same raw
tables: a figure measured on wrong tables is no figure. Reported: the completion latency of
every delivered record (p50, p95, p99, max), the cycles (how many, their seconds, where they
went), the sustained throughput, the service's CPU, its memory over time (start, end, peak,
trend), the kills; and a chart (SVG) of each cycle's latencies and the memory over the load.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from kappa_shop.bench.sampler import busy_share, machine_cpu_ticks, tree_cpu_seconds, tree_rss
from kappa_shop.errors import KappaShopError
from kappa_shop.log.config import GeneratorConfig
from kappa_shop.log.generator import generate, made_with, read_manifest
from kappa_shop.log.landing import batch_numbers, deliver
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.processes import wait_for_the_group_to_die
from kappa_shop.serving import live

HISTORY_DAYS = 7.0
START = "2024-03-01"
# the live log: a day of the shop, cut into an arrival batch per INTERVAL seconds of load; a
# batch is delivered when the records before it, at the rate asked, have taken their time, so
# that the load is steady whatever each batch holds (the simulated day has its quiet hours,
# and its last batch the stragglers that the producers' lag held past the day)
LIVE_DAYS = 1.0
HISTORY_BATCH = 25_000
INTERVAL = 2.0
# the live log's partitions start past any offset of the history's, its LSNs past its LSNs
LIVE_FIRST_OFFSET = 1_000_000_000
MEMORY_EVERY = 5.0  # seconds between samples of the service's memory and CPU
# how long the service may take: its first cycle (the history's build); to end its cycle once
# asked to stop
FIRST_CYCLE_TIMEOUT = 3600.0
STOP_TIMEOUT = 900.0
BROKER_AWAY = 10.0  # seconds the broker is down in its restart (with --kafka)
_CYCLE_LINE = r"^live: cycle (\d+) \((\d+(?:\.\d+)?) s\): (\d+) batch"


@dataclass
class LiveBenchReport:
    history_events: int
    rate: float
    minutes: float
    every: float
    kills: int = 0
    kafka: bool = False  # produced to a broker (restarted once), not landed as files
    delivered_records: int = 0  # delivered into the landing zone during the load
    accounted_records: int = 0  # of them, counted by the cycles after the history's
    delivery_seconds: float = 0.0
    history_build_seconds: float = 0.0
    history_cycle: int = 0
    load_started: str = ""  # UTC, ISO: the cycles' times are read against it
    cycles: list[dict[str, Any]] = field(default_factory=list)
    latency: dict[str, float] = field(default_factory=dict)
    throughput: float = 0.0
    cpu_cores: float = 0.0
    # the share of the machine's CPU that was busy over the load (the service, and the load's
    # delivery or producer, and anything else the machine ran)
    machine_busy: float | None = None
    memory_mib: list[tuple[float, float]] = field(default_factory=list)
    # (seconds into the load, what): the kills and the service's starts after them
    disruptions: list[tuple[float, str]] = field(default_factory=list)
    check: str = ""
    raw: str = ""  # every landed record in its raw table: "exactly once", or what was not
    records_problems: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        found = [] if self.check.startswith("equal") else [f"the models differ: {self.check}"]
        if self.raw != "exactly once":
            found.append(f"the raw tables: {self.raw}")
        if self.accounted_records != self.delivered_records:
            found.append(
                f"{self.delivered_records:,} records delivered, {self.accounted_records:,} "
                "counted by the service's cycles"
            )
        return found + [f"the service's records: {problem}" for problem in self.records_problems]

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    def memory_trend(self) -> float:
        """Least-squares slope of resident memory, MiB per minute, of the service's last JVM:
        from the load's start, or a minute after its last start after a kill."""
        starts = [at + 60.0 for at, what in self.disruptions if what == "started"]
        samples = [(t, m) for t, m in self.memory_mib if t >= max(starts, default=0.0)]
        if len(samples) < 3:
            return 0.0
        xs = [t / 60 for t, _ in samples]
        ys = [m for _, m in samples]
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
        kills = [f"{at:.0f} s" for at, what in self.disruptions if what == "killed"]
        failed = [cycle for cycle in self.cycles if cycle["error"]]
        broker = [f"{at:.0f} s" for at, what in self.disruptions if what.startswith("broker")]
        lines = [
            f"# Live freshness: {self.rate:g} events/s for {self.minutes:g} min on "
            f"{self.history_events:,} events of history"
            + (", produced to Kafka" if self.kafka else ", landed as files"),
            "",
            "| figure | value |",
            "|---|---:|",
            f"| records delivered (arrival batches every {INTERVAL:g} s) | "
            f"{self.delivered_records:,} in {self.delivery_seconds:.0f} s |",
            f"| history: the service's first cycle (its ingestion and first build) | "
            f"{self.history_build_seconds:.0f} s |",
            f"| cycles that built (a cycle every {self.every:g} s) | {len(built)} |",
            f"| cycles that failed | {len(failed)} |",
            "| kills (SIGKILL of the service, started again at once) | "
            + (f"{len(kills)}, at {', '.join(kills)} of the load" if kills else "none")
            + " |",
            *(
                [
                    f"| the broker stopped and started again | down at {broker[0]}, up at "
                    f"{broker[1]} of the load |"
                ]
                if len(broker) == 2
                else []
            ),
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
            f"| CPU of the service (2 cores here) | {self.cpu_cores:.2f} cores |",
            f"| the machine's CPU busy (the service, the load's "
            f"{'producer' if self.kafka else 'delivery'} and the rest) | "
            + ("-" if self.machine_busy is None else f"{self.machine_busy:.0%}")
            + " |",
            f"| memory of the service: start, end, peak | {memory[0]:,.0f}, {memory[-1]:,.0f}, "
            f"{max(memory):,.0f} MiB |"
            if memory
            else "| memory | - |",
            f"| memory trend (of the service's last JVM) | {self.memory_trend():+.1f} MiB/min |",
            f"| every delivered record in its raw table | {self.raw} |",
            "| the service's records (no cycle twice, no batch twice or never) | "
            + ("sound" if not self.records_problems else "; ".join(self.records_problems))
            + " |",
            f"| every model equals a full refresh | {self.check} |",
            "",
            "Slowest models, mean seconds per cycle that built: "
            + ", ".join(f"{name} {statistics.fmean(values):.1f}" for name, values in slowest),
        ]
        return "\n".join(lines) + "\n"


class _Service:
    """`kappa-shop live` in a process group of its own: started, killed with SIGKILL (the
    group, Spark's JVM included, until it is gone and the metastore free), started again,
    stopped with SIGTERM. Its lines are kept (with when each was seen) and written to a file;
    its own (`live: ...`) are said."""

    def __init__(
        self, command: list[str], root: Path, environment: dict[str, str], log: Path,
        say: Callable[[str], None],
    ) -> None:  # fmt: skip
        self.command, self.root, self.environment, self.say = command, root, environment, say
        self.log: IO[str] = log.open("w", encoding="utf-8")
        self.lines: list[tuple[float, str]] = []
        self.process: subprocess.Popen[str] | None = None
        self.reader: threading.Thread | None = None
        self.cpu_before = 0.0  # the CPU seconds of the processes killed before this one

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, cwd=self.root, env=self.environment, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True,
        )  # fmt: skip
        self.reader = threading.Thread(target=self._read, args=(self.process,), daemon=True)
        self.reader.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            self.lines.append((time.monotonic(), line))
            self.log.write(line + "\n")
            self.log.flush()
            if line.startswith("live:"):
                self.say(line)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def cpu_seconds(self) -> float:
        """CPU seconds of every process of the service so far."""
        running = self.process is not None and self.process.poll() is None
        return self.cpu_before + (tree_cpu_seconds(self.pid) if running else 0.0)

    def exited(self) -> int | None:
        assert self.process is not None
        return self.process.poll()

    def kill(self) -> None:
        assert self.process is not None
        self.cpu_before = self.cpu_seconds()
        os.killpg(self.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        self._gone()

    def _gone(self) -> None:
        """Until no process of its group lives and the metastore's lock is free."""
        metastore = self.root / "metastore_db"
        wait_for_the_group_to_die(self.pid, metastore if metastore.is_dir() else None)

    def stop(self) -> None:
        """SIGTERM: the service ends at its next safe point (SIGKILL after STOP_TIMEOUT)."""
        assert self.process is not None
        self.cpu_before = self.cpu_seconds()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
        self._gone()
        if self.reader is not None:
            self.reader.join(timeout=30)  # (its last lines read, before the file closes)
        self.log.close()

    def built_cycles(self, since: float = 0.0) -> list[tuple[int, float, float]]:
        """(number, began, ended) of each cycle that built, by this process's monotonic clock,
        from the lines seen after `since`."""
        found = []
        for seen, line in list(self.lines):
            match = re.match(_CYCLE_LINE, line)
            if match and seen >= since:
                found.append((int(match[1]), seen - float(match[2]), seen))
        return found

    def tail(self, lines: int = 25) -> str:
        return "\n".join(line for _, line in self.lines[-lines:])


class _Landed:
    """The log delivered as files into a landing zone, which the service ingests."""

    broker = False

    def __init__(self, landing: Path) -> None:
        self.landing = landing

    def arguments(self) -> list[str]:
        return ["--landing", str(self.landing)]

    def send(self, log_dir: Path, batches: list[int]) -> None:
        deliver(log_dir, self.landing, batches)

    def restart_broker(self, away: float) -> None:
        raise AssertionError("no broker")  # (never scheduled)


class _Produced(_Landed):
    """The log produced to the project's Kafka broker (`kappa-shop kafka up`), under topics of
    this run's own, by Spark's Kafka sink in this process (a Spark without a metastore); each
    batch is landed too, as the record of what was produced. The broker can be stopped and
    started again, never while a batch is being produced (a batch half-sent and sent again
    would be a redelivery the raw tables rightly hold twice)."""

    broker = True

    def __init__(self, landing: Path, home: Path, prefix: str) -> None:
        from kappa_shop.ops.broker import running
        from kappa_shop.runtime.kafka import kafka_spark

        super().__init__(landing)
        found = running(home)
        if found is None:
            raise KappaShopError(
                f"bench --live --kafka produces to the project's broker, and none runs from "
                f"{home}: start it with `kappa-shop kafka up`"
            )
        self.home, self.prefix = home, prefix
        self.bootstrap_servers = found.bootstrap_servers
        self.spark = kafka_spark("kappa_shop_bench_live")
        # (its own warnings, such as a producer's for a broker away, are not the service's)
        self.spark.sparkContext.setLogLevel("ERROR")
        self.lock = threading.Lock()

    def arguments(self) -> list[str]:
        return ["--kafka", "--bootstrap-servers", self.bootstrap_servers,
                "--topic-prefix", self.prefix]  # fmt: skip

    def send(self, log_dir: Path, batches: list[int]) -> None:
        from kappa_shop.log.produce import produce

        with self.lock:
            produce(
                self.spark, log_dir, batches, self.bootstrap_servers, progress=lambda _: None,
                topic_prefix=self.prefix, at_log_offsets=False,
            )  # fmt: skip
            deliver(log_dir, self.landing, batches)

    def restart_broker(self, away: float) -> None:
        """`kappa-shop kafka down`, `away` seconds, `kappa-shop kafka up` (its data kept)."""
        from kappa_shop.ops import broker

        with self.lock:
            broker.down(self.home, progress=lambda _: None)
            time.sleep(away)
            broker.up(self.home, progress=lambda _: None)


def run_live_bench(
    project: DbtProject,
    history_events: int,
    rate: float,
    minutes: float,
    work_dir: Path,
    every: float = 5.0,
    seed: int = 7,
    kills: int = 0,
    kafka: bool = False,
    say: Callable[[str], None] = print,
) -> LiveBenchReport:
    if rate <= 0 or minutes <= 0 or history_events < 1_000 or kills < 0:
        raise KappaShopError(
            "bench --live needs --rate and --minutes above 0, --events of at least 1000 and "
            "--kills of 0 or more"
        )
    if project.output.get("method") != "session":
        raise KappaShopError("bench --live runs on an embedded-Spark target (method: session)")
    report = LiveBenchReport(history_events, rate, minutes, every, kills, kafka)
    history_log, live_log = _logs(history_events, rate, minutes, work_dir, seed, say)
    landing = work_dir / f"live-landing-{rate:g}-{minutes:g}"
    if landing.exists():
        shutil.rmtree(landing)
    landing.mkdir(parents=True)
    log: _Landed = (
        _Produced(landing, project.root / ".kafka", f"bench_live_{seed}_{int(time.time())}.")
        if kafka
        else _Landed(landing)
    )
    environment = {
        **os.environ, "KAPPA_SHOP_SCHEMA": project.schema,
        "KAPPA_SHOP_TARGET": project.target_name, "PYTHONUNBUFFERED": "1",
    }  # fmt: skip
    say(f"bench --live: dropping {project.schema}* and its ingestion checkpoint ...")
    _worker(project.root, environment, "setup")
    log.send(history_log, batch_numbers(history_log))

    service = _Service(
        [sys.executable, "-m", "kappa_shop", "live", *log.arguments(), "--every", f"{every:g}",
         "--tests-every", "0"],
        project.root, environment, work_dir / f"bench-live-{rate:g}-{minutes:g}-service.log", say,
    )  # fmt: skip
    started = time.monotonic()
    service.start()
    report.history_cycle = _first_cycle(service)
    report.history_build_seconds = time.monotonic() - started
    say(f"bench --live: history built in {report.history_build_seconds:.0f} s (cycle "
        f"{report.history_cycle}); the load begins")  # fmt: skip

    # the load: an arrival batch every INTERVAL seconds, from a thread
    batches = batch_numbers(live_log)
    sizes = {entry["batch"]: int(entry["records"]) for entry in read_manifest(live_log)["batches"]}
    delivered = threading.Event()
    delivered_at: list[float] = []
    done = threading.Event()
    memory: list[tuple[float, float]] = []
    load_started = time.monotonic()
    report.load_started = _now().isoformat()

    def load() -> None:
        before = 0
        for number in batches:
            time.sleep(max(0.0, load_started + before / rate - time.monotonic()))
            log.send(live_log, [number])
            before += sizes[number]
        report.delivery_seconds = time.monotonic() - load_started
        report.delivered_records = before
        delivered_at.append(time.monotonic())
        delivered.set()

    def sample() -> None:
        while not done.is_set():
            if service.exited() is None:
                memory.append((time.monotonic() - load_started, tree_rss(service.pid) / 2**20))
            done.wait(MEMORY_EVERY)

    cpu_before, machine = service.cpu_seconds(), machine_cpu_ticks()
    for target in (load, sample):
        threading.Thread(target=target, daemon=True).start()
    # the disruptions: K kills, and with a broker one restart of it, at moments of the load
    rng = random.Random(seed)
    planned = [(rng.uniform(0.0, minutes * 60), "kill") for _ in range(kills)]
    if log.broker:
        planned.append((rng.uniform(0.0, minutes * 60), "broker"))
    planned.sort()
    try:
        while not (
            delivered.is_set()
            and any(began >= delivered_at[0] for _, began, _ in service.built_cycles(load_started))
        ):
            at = time.monotonic() - load_started
            if planned and at >= planned[0][0]:
                _, what = planned.pop(0)
                if what == "kill":
                    say(f"bench --live: killing the service (SIGKILL, pid {service.pid}) at "
                        f"{at:.0f} s")  # fmt: skip
                    service.kill()
                    report.disruptions.append((at, "killed"))
                    service.start()
                    report.disruptions.append((time.monotonic() - load_started, "started"))
                else:
                    say(f"bench --live: stopping the broker at {at:.0f} s, for {BROKER_AWAY:g} s")
                    report.disruptions.append((at, "broker down"))
                    log.restart_broker(BROKER_AWAY)
                    report.disruptions.append((time.monotonic() - load_started, "broker up"))
                    say("bench --live: the broker is up again")
            elif service.exited() is not None:
                raise KappaShopError(
                    f"bench --live: the service ended (exit {service.exited()}) during the "
                    "load; its last lines:\n" + service.tail()
                )
            time.sleep(0.2)
        elapsed = time.monotonic() - load_started
        report.cpu_cores = (service.cpu_seconds() - cpu_before) / elapsed
        report.machine_busy = busy_share(machine, machine_cpu_ticks())
        say("bench --live: the load is built; stopping the service (SIGTERM) ...")
    finally:
        done.set()
        if service.exited() is None:
            service.stop()
    report.memory_mib = memory

    say("bench --live: reading the cycles, counting the raw tables, comparing every model with "
        "a full refresh ...")  # fmt: skip
    result = _worker(
        project.root, environment, "report", "--history-cycle", str(report.history_cycle),
        "--landing", str(landing), *(["--kafka"] if kafka else []),
    )  # fmt: skip
    report.cycles = result["cycles"]
    histogram = {int(tick): int(count) for tick, count in result["histogram"].items()}
    report.latency = live.percentiles(histogram)
    report.accounted_records = sum(cycle["records"] for cycle in report.cycles)
    report.throughput = report.accounted_records / elapsed
    report.check, report.raw = result["check"], result["raw"]
    report.records_problems = result["records_problems"]
    return report


def _logs(
    history_events: int, rate: float, minutes: float, work_dir: Path, seed: int,
    say: Callable[[str], None],
) -> tuple[Path, Path]:  # fmt: skip
    """The history's log and the live log that continues it, generated once per size."""
    # (the history in arrival batches of about HISTORY_BATCH events: each is produced to Kafka
    # as one Spark task)
    history_batches = max(4, round(history_events / HISTORY_BATCH))
    history_log = work_dir / f"live-history-{history_events}-{seed}-{history_batches}"
    live_log = work_dir / f"live-log-{rate:g}-{minutes:g}-{seed}"
    live_batches = max(1, round(minutes * 60 / INTERVAL))
    for log_dir, config in (
        (history_log, GeneratorConfig(seed=seed, events=history_events, days=HISTORY_DAYS,
                                      start=START, batches=history_batches)),
        (live_log, GeneratorConfig(seed=seed + 1, events=max(1, round(rate * minutes * 60)),
                                   days=LIVE_DAYS,
                                   start=(date.fromisoformat(START)
                                          + timedelta(days=HISTORY_DAYS)).isoformat(),
                                   batches=live_batches, first_offset=LIVE_FIRST_OFFSET,
                                   first_lsn=LIVE_FIRST_OFFSET)),
    ):  # fmt: skip
        if not made_with(log_dir, config):
            shutil.rmtree(log_dir, ignore_errors=True)
            say(f"bench --live: generating {config.events:,} events into {log_dir} ...")
            generate(config, log_dir, progress=lambda _line: None)
    return history_log, live_log


def _first_cycle(service: _Service) -> int:
    """Wait for the service's first cycle that builds (the history's ingestion and first build)
    and return its number; stop in one line if it fails or the service ends first."""
    started = time.monotonic()
    while not service.built_cycles():
        failed = any(re.match(r"live: cycle \d+ .*: failed: ", line) for _, line in service.lines)
        if (
            failed
            or service.exited() is not None
            or time.monotonic() - started > FIRST_CYCLE_TIMEOUT
        ):
            service.kill()
            raise KappaShopError(
                "bench --live: the service's first cycle (the history's) did not build; its "
                "last lines:\n" + service.tail()
            )
        time.sleep(0.5)
    return service.built_cycles()[0][0]


def _worker(root: Path, environment: dict[str, str], *arguments: str) -> dict[str, Any]:
    """One run of bench.live_worker in a process of its own: its result."""
    from kappa_shop.bench.live_worker import RESULT_PREFIX

    command = [sys.executable, "-m", "kappa_shop.bench.live_worker", *arguments]
    done = subprocess.run(
        command, cwd=root, env=environment, capture_output=True, text=True, errors="replace",
        check=False,
    )  # fmt: skip
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result = dict(json.loads(line[len(RESULT_PREFIX) :]))
            if result.get("failed"):
                raise KappaShopError(f"bench --live: {result['problems'][0]}")
            return result
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
    raise KappaShopError(
        f"bench --live: its worker ({arguments[0]}) stopped without a result (exit "
        f"{done.returncode}); its last lines:\n{tail}"
    )


def _now() -> datetime:
    """Now, in UTC, as the cycles table keeps it (without a zone)."""
    return datetime.now(UTC).replace(tzinfo=None)


def chart_svg(report: LiveBenchReport) -> str:
    """The run as a picture: each cycle's completion latency (p50, p99, max of its records) at
    the moment it ended, and the service's memory, over the load; a kill a red line."""
    width, height, left, right, gap = 900, 560, 70, 20, 60
    panel = (height - 3 * gap) // 2
    start = datetime.fromisoformat(report.load_started) if report.load_started else None
    points: dict[str, list[tuple[float, float]]] = {"p50": [], "p99": [], "max": []}
    for cycle in report.cycles:
        if not cycle["latency"] or start is None:
            continue
        ended = (datetime.fromisoformat(cycle["started"]) - start).total_seconds() + cycle[
            "seconds"
        ]
        for name in points:
            points[name].append((ended, cycle["latency"][name]))
    span = max(
        [report.minutes * 60]
        + [x for series in points.values() for x, _ in series]
        + [t for t, _ in report.memory_mib]
    )
    top_latency = max([y for series in points.values() for _, y in series] + [60.0]) * 1.1
    top_memory = max([m for _, m in report.memory_mib] + [1.0]) * 1.1

    def x_of(seconds: float) -> float:
        return left + (width - left - right) * seconds / span

    def polyline(series: list[tuple[float, float]], top: float, y0: int, colour: str) -> str:
        if not series:
            return ""
        coordinates = " ".join(
            f"{x_of(x):.1f},{y0 + panel - panel * y / top:.1f}" for x, y in series
        )
        return (
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coordinates}"/>'
        )

    def frame(y0: int, top: float, title: str, unit: str) -> list[str]:
        parts = [
            f'<rect x="{left}" y="{y0}" width="{width - left - right}" height="{panel}" '
            'fill="none" stroke="#999"/>',
            f'<text x="{left}" y="{y0 - 8}" font-size="13">{title}</text>',
        ]
        for fraction in (0.0, 0.5, 1.0):
            y = y0 + panel - panel * fraction
            parts.append(
                f'<text x="{left - 6}" y="{y + 4:.0f}" font-size="11" text-anchor="end">'
                f"{top * fraction:,.0f} {unit}</text>"
            )
        return parts

    y_latency, y_memory = gap, 2 * gap + panel
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif">',
        '<rect width="100%" height="100%" fill="white"/>',
        *frame(
            y_latency,
            top_latency,
            "completion latency of each cycle's records: p50 (blue), p99 (orange), max (grey)",
            "s",
        ),
        *frame(y_memory, top_memory, "the service's resident memory", "MiB"),
    ]
    y = y_latency + panel - panel * 60.0 / top_latency  # the target (top_latency is above it)
    parts.append(
        f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
        'stroke="#2a2" stroke-dasharray="4 4"/>'
    )
    for name, colour in (("max", "#999"), ("p99", "#e67e22"), ("p50", "#2471a3")):
        parts.append(polyline(points[name], top_latency, y_latency, colour))
    parts.append(polyline(report.memory_mib, top_memory, y_memory, "#2471a3"))
    for at, what in report.disruptions:
        if what in ("killed", "broker down", "broker up"):
            dashes = "" if what == "killed" else ' stroke-dasharray="6 3"'
            colour = "#c0392b" if what == "killed" else "#8e44ad"
            parts.append(
                f'<line x1="{x_of(at):.1f}" x2="{x_of(at):.1f}" y1="{y_latency}" '
                f'y2="{y_memory + panel}" stroke="{colour}"{dashes}/>'
            )
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = x_of(span * fraction)
        parts.append(
            f'<text x="{x:.0f}" y="{height - gap + 18}" font-size="11" text-anchor="middle">'
            f"{span * fraction / 60:.1f} min</text>"
        )
    parts.append(
        f'<text x="{left}" y="{height - 10}" font-size="12">{report.rate:g} events/s for '
        f"{report.minutes:g} min on {report.history_events:,} events of history; kills in red"
        + ("; the broker's stop and start dashed violet" if report.kafka else "")
        + "; the 60 s target dashed green</text>"
    )
    return "\n".join([*parts, "</svg>"]) + "\n"


def write_live_results(report: LiveBenchReport, work_dir: Path) -> list[Path]:
    stem = work_dir / f"bench-live-{report.rate:g}-{report.minutes:g}"
    markdown = stem.with_suffix(".md")
    markdown.write_text(report.markdown())
    data = stem.with_suffix(".json")
    data.write_text(json.dumps(asdict(report), indent=1, default=str))
    chart = stem.with_suffix(".svg")
    chart.write_text(chart_svg(report))
    return [markdown, data, chart]
