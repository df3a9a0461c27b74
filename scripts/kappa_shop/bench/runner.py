"""`kappa-shop bench`: what a full refresh, incremental runs and a backfill cost at a chosen
scale, side by side with two baselines, measured in one run on the same data.

The log: `--events` events over 30 days in 200 arrival batches (about 0.5% each), without
malformed records or conflicting redeliveries (so that the hand-written baseline computes the
same thing without a quarantine), 1% redeliveries, no late events except the held-back ones:
`held_back_fraction` of the events of the last 6 days arrive after the period (the stragglers
batch): later than the usual alternative's 3-day lookback reaches, so that the benchmark
shows what the lookback misses. The schedule, by record counts of the manifest:

1. base: every batch but the last ~2% of records -> ingest, `dbt run --full-refresh`; the
   same models as plain dbt tables in `<schema>_plain` (the fair floor, checked equal model
   by model), then the contract's full refresh again (both warm); the usual alternative's
   models (insert_overwrite by day, a 3-day lookback) built
2. +1%: the next batches, ~1% of the records, on time -> ingest, `dbt run`; the alternative's
   models run
3. +1% late: the last on-time batches (~0.9%) and the held-back events (~0.1%, up to 6 days
   late) -> ingest, `dbt run`, the alternative's models run; then `dbt run` again with
   nothing new (what every run costs whatever arrived: dbt's and the contract's fixed cost);
   then the alternative's models and ours compared with a full refresh (plain tables)
4. a 30-day backfill of the daily aggregate: orders_daily rebuilt (`--full-refresh`), and
   the same model as dbt's `microbatch` strategy rebuilt for the same 30 days
   (bench_orders_daily_microbatch, one batch per day); both tables are compared
5. the floor: `dbt run --full-refresh` of what sessions and orders_daily need, and a
   hand-written PySpark job computing the same two tables straight from the raw tables
   (kappa_shop.bench.handwritten); both outputs are compared
6. proportionality: one fixed batch (bench_batch_config: 1% of the events, at most 10,000, a
   tenth of them up to 3 days late) applied to this history and to a history a tenth of its
   size (`<schema>_tenth`, generated with the same settings and built in full first)

The generator runs in a process of its own; ingestion and dbt run in this process, with one
SparkSession (as `kappa-shop build` does), so no step pays for starting Spark. Memory is the
resident set of the process and its children (Spark's JVM), sampled every 0.2 s. That JVM's
heap grows towards what the driver setting allows (8 GiB) and keeps it, so its figures say
what it took, not what ingestion needs: the base is also ingested a second time in a process
of its own with a 1 GiB driver, into a scratch metastore and warehouse (`ingest base alone`),
whose peak is ingestion's memory alone at that scale.

`--successive N` (run_successive) measures something else on the same log: a base of every
on-time batch but the last N% of the records, a full refresh, then N incremental runs of 1%
each one after another in the same JVM, and one with nothing new. It shows how much of an
incremental run is the JVM warming up (compiling the code of statements it has not run yet):
each `dbt run` on the local target starts a JVM of its own, a long-lived one (the cluster
target's Thrift Server) would keep its compiled code from run to run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kappa_shop.bench.checks import check_models, model_grains
from kappa_shop.bench.plan import (
    ALONE_DRIVER_MEMORY,
    ALONE_RAW_SCHEMA,
    BASELINE_MODELS,
    BASELINE_VARS,
    BATCH_ON_HISTORY_STEP,
    BATCH_ON_TENTH_STEP,
    BATCH_POINT,
    HELD_BACK_DAYS,
    LATE_DAYS,
    LATE_POINT,
    LOOKBACK_MODELS,
    MICROBATCH_MODEL,
    PLAIN_STEP,
    PLAIN_SUFFIX,
    PLAIN_VARS,
    SMALL_SUFFIX,
    SUCCESSIVE_POINT,
    TENTH_POINT,
    WARM_STEP,
    bench_batch_config,
    bench_log_config,
    plan_batches,
    plan_successive,
)
from kappa_shop.bench.report import BenchReport, Step
from kappa_shop.bench.sampler import (
    MemorySampler,
    busy_share,
    machine_cpu_ticks,
    run_sampled,
    tree_cpu_seconds,
)
from kappa_shop.errors import KappaShopError
from kappa_shop.log.generator import GeneratorConfig, read_manifest
from kappa_shop.runtime.dbt import DbtProject


def _generate(config: GeneratorConfig, log_dir: Path, say: Callable[[str], None]) -> Step:
    """Generate the log in a process of its own (reused when the same log is there)."""
    figures = log_dir.parent / f"{log_dir.name}.generated.json"
    manifest = log_dir / "manifest.json"
    reusable = manifest.is_file() and figures.is_file()
    # a knob added to the generator since the log was made has its default there (the same
    # bytes as before it existed)
    made_with = (
        {**asdict(GeneratorConfig()), **read_manifest(log_dir)["config"]} if reusable else {}
    )
    if made_with == asdict(config):
        say(f"Reusing the log in {log_dir} (generated earlier with the same settings)")
        return Step(**json.loads(figures.read_text()))
    if log_dir.exists():
        shutil.rmtree(log_dir)
    command = [sys.executable, "-m", "kappa_shop", "generate", "--out", str(log_dir)]
    for knob, value in asdict(config).items():
        command += ["--" + knob.replace("_", "-"), str(value)]
    started, machine = time.monotonic(), machine_cpu_ticks()
    returncode, peak, cpu = run_sampled(command)
    if returncode != 0:
        raise KappaShopError(f"generating the benchmark log failed (exit {returncode})")
    step = Step(
        "generate",
        time.monotonic() - started,
        peak / 2**20,
        cpu_seconds=cpu,
        machine_busy=busy_share(machine, machine_cpu_ticks()),
    )
    figures.write_text(json.dumps(asdict(step)))
    return step


def _ingest_alone(project: DbtProject, landing: Path, work_dir: Path, records: int) -> Step:
    """Ingest the landing zone in a process of its own with an ALONE_DRIVER_MEMORY driver, in
    a scratch directory (its own metastore and warehouse, removed afterwards); its peak
    resident memory is ingestion's alone. Fails unless it ingests exactly `records`."""
    started, machine = time.monotonic(), machine_cpu_ticks()
    # (its output goes to a log: with a small driver Spark warns each time a cached partition
    # spills to disk, which is what the cache is for)
    log = work_dir / "ingest-alone.log"
    with (
        tempfile.TemporaryDirectory(prefix="ingest-alone-", dir=work_dir) as scratch,
        log.open("w") as output_file,
    ):
        returncode, peak, cpu = run_sampled(
            [sys.executable, "-m", "kappa_shop.bench.runner", "--ingest-alone", str(landing),
             str(project.profiles_dir), project.target_name],
            cwd=scratch,
            env={**os.environ, "KAPPA_SHOP_DRIVER_MEMORY": ALONE_DRIVER_MEMORY},
            stdout=output_file,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    output = log.read_text(errors="replace")
    ingested = [line.split()[1] for line in output.splitlines() if line.startswith("ingested ")]
    if returncode != 0 or ingested != [str(records)]:
        raise KappaShopError(
            f"ingesting the base alone failed (exit {returncode}, ingested "
            f"{ingested or 'nothing'} of {records:,} records; its log: {log})"
        )
    return Step(
        "ingest base alone",
        time.monotonic() - started,
        peak / 2**20,
        f"{records:,} records, in a process of its own with a {ALONE_DRIVER_MEMORY} driver "
        "(Spark's start included)",
        cpu_seconds=cpu,
        machine_busy=busy_share(machine, machine_cpu_ticks()),
    )


def _ingest_alone_main(landing: Path, profiles_dir: Path, target: str) -> int:
    """The process of _ingest_alone, in its scratch directory (the working directory): Spark
    with the target's settings (the driver memory from KAPPA_SHOP_DRIVER_MEMORY), its
    metastore and warehouse here, `conf` and `logs` as in the project."""
    from kappa_shop.ingest.ingestion import ingest
    from kappa_shop.runtime.spark import (
        prepare_scratch_directory,
        profile_output,
        session_for_output,
    )

    prepare_scratch_directory(Path.cwd(), profiles_dir)
    spark = session_for_output(profile_output(profiles_dir, target), target)
    report = ingest(spark, landing, ALONE_RAW_SCHEMA, progress=lambda _: None)
    print(f"ingested {report.records}", flush=True)
    spark.stop()
    return 0


def run_bench(
    project: DbtProject,
    events: int,
    work_dir: Path,
    seed: int = 7,
    say: Callable[[str], None] = print,
) -> BenchReport:
    """Run every step at `events` and return the figures (see the module docstring)."""
    log_dir, manifest, generated = _prepare_log(project, events, work_dir, seed, say)
    plan = plan_batches(manifest)
    held_back = manifest["lateness_of_late_events"].get("held_back", 0)
    schema = project.schema
    landing = work_dir / f"landing-{events}-{seed}"
    extra = {"held_back_late": held_back}
    with _Recorder(project, manifest, plan, log_dir, landing, say, generated, extra) as recorder:
        report, step, dbt_run = recorder.report, recorder.step, recorder.dbt_run
        spark, warehouse, dbt_vars = recorder.spark, recorder.warehouse, recorder.dbt_vars
        recorder.land_and_ingest("base")
        say("bench: ingest base alone ...")
        alone = _ingest_alone(project, recorder.landing, work_dir, report.records["base"])
        report.steps.append(alone)
        peak = f"{alone.peak_rss_mib:,.0f}"
        say(f"bench: ingest base alone took {alone.seconds:.1f} s (peak {peak} MiB)")
        recorder.parse_and_full_refresh()
        recorder.plain_full_refresh()
        lookback = list(LOOKBACK_MODELS.values())
        with step("full refresh: insert_overwrite baselines", ", ".join(lookback)) as models:
            dbt_run(models, "--full-refresh", select=lookback)
        for group, name, detail in (
            ("plus_1pct", "incremental +1%", ""),
            ("plus_1pct_late", "incremental +1% late",
             f", {held_back:,} up to {HELD_BACK_DAYS:g} days late"),
        ):  # fmt: skip
            recorder.land_and_ingest(group)
            with step(name, f"{report.records[group]:,} new records{detail}") as models:
                dbt_run(models)
            with step(f"{name}: insert_overwrite baselines", LOOKBACK_DETAIL) as models:
                dbt_run(models, select=lookback)
        recorder.nothing_new()
        recorder.differences_from_a_full_refresh()

        start, end = _event_days(warehouse, schema)
        days = f"{start} to {end}"
        with step("backfill 30 days: exact_incremental", f"orders_daily, {days}"):
            project.invoke("run", "--select", "orders_daily", "--full-refresh", "--quiet",
                           dbt_vars=dbt_vars)  # fmt: skip
        with step("backfill 30 days: dbt microbatch", f"{MICROBATCH_MODEL}, one batch a day"):
            project.invoke(
                "run", "--select", MICROBATCH_MODEL, "--full-refresh",
                "--event-time-start", start, "--event-time-end", end, "--quiet",
                dbt_vars=dbt_vars,
            )  # fmt: skip
        report.checks["microbatch equals orders_daily"] = _compare(
            warehouse, f"{schema}.orders_daily", f"{schema}.{MICROBATCH_MODEL}", "*"
        )

        with step("full refresh for sessions and orders_daily", "+sessions +orders_daily"):
            project.invoke("run", "--select", "+sessions", "+orders_daily", "--full-refresh",
                           "--quiet", dbt_vars=dbt_vars)  # fmt: skip
        from kappa_shop.bench import handwritten

        gap, length = _session_vars(project)
        with step("hand-written PySpark job", "sessions and orders_daily from the raw tables"):
            handwritten.run(spark, project.raw_schema, f"{schema}_handwritten", gap, length)
        for name, check in (
            ("sessions", "hand-written sessions equal dbt's"),
            ("orders_daily", "hand-written orders_daily equals dbt's"),
        ):  # every column of dbt's table, key by key
            report.checks[check] = check_models(
                warehouse, {name: recorder.grains[name]}, schema, f"{schema}_handwritten"
            )
        recorder.proportionality(events, seed, work_dir)
    return report


def run_successive(
    project: DbtProject,
    events: int,
    work_dir: Path,
    runs: int,
    seed: int = 7,
    say: Callable[[str], None] = print,
) -> BenchReport:
    """`bench --successive RUNS`: the same log, a base of all but the last RUNS% of the
    on-time records, a full refresh, then RUNS incremental runs of 1% each one after another
    in the same JVM, and one with nothing new: what an incremental run costs as the JVM warms
    up (each `dbt run` on the local target starts a JVM of its own; a long-lived one, such as
    the cluster target's Thrift Server, would keep its compiled code from run to run)."""
    if runs < 1:
        raise KappaShopError(f"--successive must be at least 1 (got {runs})")
    log_dir, manifest, generated = _prepare_log(project, events, work_dir, seed, say)
    plan = plan_successive(manifest, runs)
    landing = work_dir / f"landing-successive-{events}-{seed}"
    with _Recorder(project, manifest, plan, log_dir, landing, say, generated) as recorder:
        records = recorder.report.records
        recorder.land_and_ingest("base")
        recorder.parse_and_full_refresh()
        for number in range(1, runs + 1):
            group = f"run {number}"
            recorder.land_and_ingest(group)
            with recorder.step(f"incremental {group}", f"{records[group]:,} new records") as models:
                recorder.dbt_run(models)
        recorder.nothing_new()
        recorder.check_every_model(SUCCESSIVE_POINT)
    return recorder.report


def _prepare_log(
    project: DbtProject, events: int, work_dir: Path, seed: int, say: Callable[[str], None]
) -> tuple[Path, dict[str, Any], Step]:
    """Check the arguments and the target; generate the log (or reuse it): its directory, its
    manifest and the generator's step."""
    if events < 10_000:
        raise KappaShopError(f"--events must be at least 10000 for the benchmark (got {events})")
    if project.output.get("method") != "session":
        raise KappaShopError(
            f"bench runs on an embedded-Spark target (method: session), not on "
            f"{project.target_name!r}: it ingests, runs dbt and the hand-written baseline in "
            "one SparkSession in this process"
        )
    work_dir.mkdir(parents=True, exist_ok=True)
    log_dir = work_dir / f"log-{events}-{seed}"
    generated = _generate(bench_log_config(events, seed), log_dir, say)
    return log_dir, read_manifest(log_dir), generated


LOOKBACK_DETAIL = "dbt-spark's standard incremental, a 3-day lookback: " + ", ".join(
    LOOKBACK_MODELS.values()
)


# another schema to build in: the project built there, and the vars to build it with
Elsewhere = tuple[DbtProject, dict[str, Any]]


class _Recorder:
    """A benchmark's measuring, in this process with one SparkSession: each step's wall time,
    peak memory, CPU time, the machine's busy share and the JVM's compiling (`step`); dbt runs
    of the project's models (not the microbatch baseline) with each model's own time
    (`dbt_run`); a group of arrival batches landed and ingested (`land_and_ingest`). Its report
    starts with the generator's step. Entered, it starts from nothing (_start_clean) and
    samples memory."""

    def __init__(
        self,
        project: DbtProject,
        manifest: dict[str, Any],
        plan: dict[str, list[int]],
        log_dir: Path,
        landing: Path,
        say: Callable[[str], None],
        generated: Step,
        extra_records: dict[str, int] | None = None,
    ) -> None:
        records = {entry["batch"]: entry["records"] for entry in manifest["batches"]}
        self.project, self.plan, self.log_dir = project, plan, log_dir
        self.schema = project.schema
        self.landing, self.say = landing, say
        self.report = BenchReport(
            events=manifest["totals"]["valid"],
            records={name: sum(records[b] for b in group) for name, group in plan.items()}
            | (extra_records or {}),
            machine=_machine(project),
            steps=[generated],
        )
        self.dbt_vars: dict[str, Any] = dict(BASELINE_VARS)
        # the project's models and their grains (set by the first full refresh): what the
        # equality checks compare
        self.grains: dict[str, list[str]] = {}
        self.memory = MemorySampler(os.getpid())

    def __enter__(self) -> _Recorder:
        _start_clean(self.project, self.landing)
        self.spark = self.project.spark()
        self.warehouse = self.project.warehouse()
        self.compilers = (
            self.spark._jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
        )
        self.memory.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.memory.__exit__(*exc)

    def compiling(self) -> float:
        """Seconds the JVM's JIT compilers have spent compiling since it started."""
        return self.compilers.getTotalCompilationTime() / 1000

    @contextmanager
    def step(self, name: str, detail: str = "") -> Iterator[dict[str, float]]:
        self.say(f"bench: {name} ...")
        self.memory.reset()
        models: dict[str, float] = {}
        cpu, machine, jit = tree_cpu_seconds(os.getpid()), machine_cpu_ticks(), self.compiling()
        started = time.monotonic()
        yield models
        seconds = time.monotonic() - started
        peak = self.memory.peak / 2**20
        self.report.steps.append(
            Step(
                name,
                seconds,
                peak,
                detail,
                models,
                cpu_seconds=tree_cpu_seconds(os.getpid()) - cpu,
                machine_busy=busy_share(machine, machine_cpu_ticks()),
                jit_seconds=self.compiling() - jit,
            )
        )
        self.say(f"bench: {name} took {seconds:.1f} s (peak {peak:,.0f} MiB)")

    def dbt_run(
        self,
        models: dict[str, float],
        *arguments: str,
        select: list[str] | None = None,
        there: Elsewhere | None = None,
    ) -> Any:
        """Run the project's models (not the baselines), or the models of `select`, and keep
        each model's own wall time (dbt's run results); dbt's result. Into the benchmark's
        schema, or `there`."""
        selection = ["--select", *select] if select else ["--exclude", *BASELINE_MODELS]
        project, dbt_vars = there or (self.project, self.dbt_vars)
        result = project.invoke("run", *selection, *arguments, "--quiet", dbt_vars=dbt_vars)
        timings = {
            item.node.name: float(item.execution_time)
            for item in result.results
            if item.node.resource_type == "model"
        }
        models.update(sorted(timings.items(), key=lambda item: -item[1]))
        return result

    def parse_and_full_refresh(self) -> None:
        """`dbt parse`, then a full refresh of the project's models on the base: the models
        every check compares (`grains`)."""
        with self.step("dbt parse"):
            self.project.invoke("parse", "--quiet", dbt_vars=self.dbt_vars)
        base = self.report.records["base"]
        with self.step("full refresh", f"all models, {base:,} records") as models:
            self.grains = model_grains(self.dbt_run(models, "--full-refresh"))

    PLAIN = PLAIN_STEP
    WARM = WARM_STEP
    BATCH_ON_HISTORY = BATCH_ON_HISTORY_STEP
    BATCH_ON_TENTH = BATCH_ON_TENTH_STEP

    def plain_tables(self) -> AbstractContextManager[Elsewhere]:
        """The project's models as plain dbt tables (var kappa_bench_plain_tables) in the
        schema `<schema>_plain`."""
        return self.elsewhere(PLAIN_SUFFIX, PLAIN_VARS)

    @contextmanager
    def elsewhere(
        self, suffix: str, variables: dict[str, Any], raw_schema: str | None = None
    ) -> Iterator[Elsewhere]:
        """The models built in the schema `<schema><suffix>` from `raw_schema` (the benchmark's
        when None), with `variables` added to the benchmark's. dbt parses the project again
        whenever its vars or schema change; that parse happens before and after, outside
        every measured step."""
        raw = raw_schema or self.project.raw_schema
        there = self.project.elsewhere(self.schema + suffix, raw)
        dbt_vars = {**self.dbt_vars, **variables}
        try:
            there.invoke("parse", "--quiet", dbt_vars=dbt_vars)
            yield there, dbt_vars
        finally:
            self.project.invoke("parse", "--quiet", dbt_vars=self.dbt_vars)

    def plain_full_refresh(self) -> None:
        """The fair floor of the full refresh: the same models, on the same records, built as
        plain dbt tables (no contract), then the contract's full refresh again right after it,
        so that both run in a JVM the first full refresh has warmed (the first build of a JVM
        also compiles the code of its statements: it took 78 s against 49 s at 1M events);
        checked to hold the same rows, model by model."""
        detail = "all models, no contract"
        with self.plain_tables() as there, self.step(self.PLAIN, detail) as models:
            self.dbt_run(models, "--full-refresh", there=there)
        with self.step(self.WARM, "all models, right after the plain tables") as models:
            self.dbt_run(models, "--full-refresh")
        self.report.checks["plain dbt tables equal the contract's full refresh"] = check_models(
            self.warehouse, self.grains, self.schema, self.schema + PLAIN_SUFFIX
        )

    def proportionality(self, events: int, seed: int, work_dir: Path) -> None:
        """The same fixed batch (bench_batch_config) applied to this history (every record of
        the log, already built) and to a history a tenth of its size, generated with the same
        settings, ingested into `<schema>_tenth_raw` and built in full in `<schema>_tenth`:
        what each run costs (the DAG's run after the batch is ingested)."""
        from kappa_shop.ingest.ingestion import ingest
        from kappa_shop.log.landing import batch_numbers, deliver

        batch_log = work_dir / f"batch-{events}-{seed}"
        tenth_log = work_dir / f"log-{events // 10}-{seed}"
        # generated in a process of their own, as the log was; not steps of the report
        _generate(bench_batch_config(events, seed), batch_log, self.say)
        _generate(bench_log_config(events // 10, seed), tenth_log, self.say)
        self.report.records["fixed_batch"] = read_manifest(batch_log)["totals"]["records"]
        held_back = read_manifest(batch_log)["lateness_of_late_events"].get("held_back", 0)
        detail = f"{self.report.records['fixed_batch']:,} records, {held_back:,} up to " \
            f"{LATE_DAYS:g} days late"  # fmt: skip

        def land_and_ingest(log: Path, landing: Path, raw_schema: str, name: str) -> None:
            deliver(log, landing, batch_numbers(log))
            records = read_manifest(log)["totals"]["records"]
            with self.step(name, f"{records:,} records"):
                ingest(self.spark, landing, raw_schema, progress=lambda _: None,
                       warehouse=self.warehouse)  # fmt: skip

        raw = self.project.raw_schema
        land_and_ingest(batch_log, self.landing, raw, "ingest the fixed batch")
        with self.step(self.BATCH_ON_HISTORY, detail) as models:
            self.dbt_run(models)
        self.check_every_model(BATCH_POINT)
        tenth_landing = self.landing.with_name(self.landing.name + SMALL_SUFFIX)
        tenth_raw = self.schema + SMALL_SUFFIX + "_raw"
        land_and_ingest(tenth_log, tenth_landing, tenth_raw, "ingest a tenth of the history")
        self.report.records["tenth_history"] = read_manifest(tenth_log)["totals"]["records"]
        with self.elsewhere(SMALL_SUFFIX, {}, tenth_raw) as there:
            tenth = f"all models, {self.report.records['tenth_history']:,} records"
            with self.step("full refresh of a tenth of the history", tenth) as models:
                self.dbt_run(models, "--full-refresh", there=there)
            land_and_ingest(batch_log, tenth_landing, tenth_raw, "ingest the fixed batch, a tenth")
            with self.step(self.BATCH_ON_TENTH, detail) as models:
                self.dbt_run(models, there=there)
        self.check_every_model(TENTH_POINT, SMALL_SUFFIX, tenth_raw)

    def check_every_model(self, point: str, suffix: str = "", raw_schema: str = "") -> None:
        """Every model of `<schema><suffix>` against a full refresh of the same records: the
        project's models rebuilt as plain dbt tables in `<schema><suffix>_plain` from
        `raw_schema` (the benchmark's when empty), a step of its own; then compared model by
        model, every column (bench_checks), as the check `every model equals a full refresh
        <point>`."""
        built, reference = self.schema + suffix, self.schema + suffix + PLAIN_SUFFIX
        raw = raw_schema or self.project.raw_schema
        step = self.step(f"{self.PLAIN}, {point}", f"all models, every record of {raw}")
        with self.elsewhere(suffix + PLAIN_SUFFIX, PLAIN_VARS, raw) as there, step:
            self.dbt_run({}, "--full-refresh", there=there)
        check, started = f"every model equals a full refresh {point}", time.monotonic()
        self.report.checks[check] = check_models(self.warehouse, self.grains, built, reference)
        self.report.compared[check] = sorted(self.grains)
        seconds = time.monotonic() - started
        self.say(f"bench: {check}: {self.report.checks[check]} (compared in {seconds:.1f} s)")

    def differences_from_a_full_refresh(self) -> None:
        """After the late step: every model against a full refresh on every record so far (in
        `<schema>_plain`, check_every_model); then the rows of ours and of each lookback
        baseline that differ from it, for the table of the usual alternative."""
        schema, plain = self.schema, self.schema + PLAIN_SUFFIX
        self.check_every_model(LATE_POINT)
        for name, baseline in LOOKBACK_MODELS.items():
            ours = _differences(self.warehouse, f"{schema}.{name}", f"{plain}.{name}", "*")
            theirs = _differences(self.warehouse, f"{schema}.{baseline}", f"{plain}.{name}", "*")
            self.report.differences[name] = {"exact_incremental": ours, "lookback": theirs}

    def nothing_new(self) -> None:
        """An incremental run with no new records: the fixed cost of a run."""
        detail = "no new records: the fixed cost of a run (the floor)"
        with self.step("incremental, nothing new", detail) as models:
            self.dbt_run(models)

    def land_and_ingest(self, group: str) -> None:
        from kappa_shop.ingest.ingestion import ingest
        from kappa_shop.log.landing import deliver

        deliver(self.log_dir, self.landing, self.plan[group])
        with self.step(f"ingest {group}", f"{self.report.records[group]:,} records"):
            ingest(self.spark, self.landing, self.project.raw_schema, progress=lambda _: None,
                   warehouse=self.warehouse)  # fmt: skip


def _start_clean(project: DbtProject, landing: Path) -> None:
    """A benchmark starts from nothing: no landing zone, no raw tables, no models."""
    from kappa_shop.ingest.ingestion import checkpoint_dir
    from kappa_shop.runtime.warehouse import schema_exists

    warehouse = project.warehouse()
    shutil.rmtree(landing, ignore_errors=True)
    schemas = ("_raw", "", "_handwritten", PLAIN_SUFFIX, SMALL_SUFFIX, SMALL_SUFFIX + "_raw",
               SMALL_SUFFIX + PLAIN_SUFFIX)  # fmt: skip
    shutil.rmtree(landing.with_name(landing.name + SMALL_SUFFIX), ignore_errors=True)
    for schema in (project.schema + suffix for suffix in schemas):
        if schema_exists(warehouse, schema):
            warehouse.sql(f"drop schema {schema} cascade")
    for raw_schema in (project.raw_schema, project.schema + SMALL_SUFFIX + "_raw"):
        shutil.rmtree(checkpoint_dir(warehouse, raw_schema), ignore_errors=True)


def _event_days(warehouse: Any, schema: str) -> tuple[str, str]:
    """The first day of the order events and the day after the last (the backfill's span)."""
    row = warehouse.sql(
        "select cast(min(to_date(occurred_at)) as string) as first_day, "
        "cast(date_add(max(to_date(occurred_at)), 1) as string) as end_day "
        f"from {schema}.stg_orders__order_events"
    )[0]
    return row["first_day"], row["end_day"]


def _differences(warehouse: Any, left: str, right: str, columns: str) -> list[int]:
    """[rows only in left, rows only in right, rows in left], the tables taken as multisets
    of `columns`."""
    counts = warehouse.sql(
        f"select (select count(*) from (select {columns} from {left} except all "
        f"select {columns} from {right})) as only_left, "
        f"(select count(*) from (select {columns} from {right} except all "
        f"select {columns} from {left})) as only_right, "
        f"(select count(*) from {left}) as total"
    )[0]
    return [int(counts["only_left"]), int(counts["only_right"]), int(counts["total"])]


def _difference_text(counts: list[int], left: str, right: str) -> str:
    only_left, only_right, total = counts
    if only_left == 0 and only_right == 0:
        return f"equal ({total:,} rows)"
    return f"DIFFERENT: {only_left:,} rows only in {left}, {only_right:,} only in {right}"


def _compare(warehouse: Any, left: str, right: str, columns: str) -> str:
    """'equal (N rows)' when both hold the same rows (as multisets), else what differs."""
    return _difference_text(_differences(warehouse, left, right, columns), left, right)


def _session_vars(project: DbtProject) -> tuple[int, int]:
    import yaml

    variables = yaml.safe_load((project.root / "dbt_project.yml").read_text())["vars"]
    return int(variables["session_inactivity_gap_minutes"]), int(
        variables["session_max_length_hours"]
    )


def _machine(project: DbtProject) -> dict[str, str]:
    import pyspark

    memory = Path("/proc/meminfo").read_text().split()[1]
    return {
        "cpus": str(os.cpu_count()),
        "memory_gib": f"{int(memory) / 2**20:.0f}",
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "spark_driver_memory": str(
            (project.output.get("server_side_parameters") or {}).get("spark.driver.memory", "")
        ),
        "target": project.target_name,
    }


if __name__ == "__main__":
    # python -m kappa_shop.bench.runner --ingest-alone LANDING PROFILES_DIR TARGET (_ingest_alone)
    if sys.argv[1:2] != ["--ingest-alone"] or len(sys.argv) != 5:
        sys.exit(
            "usage: python -m kappa_shop.bench.runner --ingest-alone LANDING PROFILES_DIR TARGET"
        )
    sys.exit(_ingest_alone_main(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]))
