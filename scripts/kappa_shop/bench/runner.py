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

dbt runs on the benchmark's own project (kappa_shop.bench.baselines): the project's models
with the baselines beside them, generated from the project's own SQL.

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

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kappa_shop.bench.baselines import bench_project
from kappa_shop.bench.checks import check_models
from kappa_shop.bench.plan import (
    ALONE_DRIVER_MEMORY,
    ALONE_RAW_SCHEMA,
    HELD_BACK_DAYS,
    LOOKBACK_MODELS,
    MICROBATCH_MODEL,
    SUCCESSIVE_POINT,
    bench_log_config,
    plan_batches,
    plan_successive,
)
from kappa_shop.bench.recorder import Recorder, compare_tables, generate_log
from kappa_shop.bench.report import BenchReport, Step
from kappa_shop.bench.sampler import (
    busy_share,
    machine_cpu_ticks,
    run_sampled,
)
from kappa_shop.errors import KappaShopError
from kappa_shop.log.generator import read_manifest
from kappa_shop.runtime.dbt import DbtProject

LOOKBACK_DETAIL = "dbt-spark's standard incremental, a 3-day lookback: " + ", ".join(
    LOOKBACK_MODELS.values()
)


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
    select: list[str] | None = None,
) -> BenchReport:
    """Run every step at `events` and return the figures (see the module docstring), on every
    model of the project or on the models of `select` (bench_selection)."""
    project = bench_project(project, work_dir)
    log_dir, manifest, generated = _prepare_log(project, events, work_dir, seed, say)
    plan = plan_batches(manifest)
    held_back = manifest["lateness_of_late_events"].get("held_back", 0)
    schema = project.schema
    landing = work_dir / f"landing-{events}-{seed}"
    extra = {"held_back_late": held_back}
    recorder = Recorder(project, manifest, plan, log_dir, landing, say, generated, extra, select)
    with recorder:
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
        for name, baseline in LOOKBACK_MODELS.items():
            # generated from the model's SQL: the same rows while nothing has come late
            report.checks[f"{baseline} equals {name} before late data"] = compare_tables(
                warehouse, f"{schema}.{name}", f"{schema}.{baseline}", "*"
            )
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
        report.checks["microbatch equals orders_daily"] = compare_tables(
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
    select: list[str] | None = None,
) -> BenchReport:
    """`bench --successive RUNS`: the same log, a base of all but the last RUNS% of the
    on-time records, a full refresh, then RUNS incremental runs of 1% each one after another
    in the same JVM, and one with nothing new: what an incremental run costs as the JVM warms
    up (each `dbt run` on the local target starts a JVM of its own; a long-lived one, such as
    the cluster target's Thrift Server, would keep its compiled code from run to run)."""
    if runs < 1:
        raise KappaShopError(f"--successive must be at least 1 (got {runs})")
    project = bench_project(project, work_dir)
    log_dir, manifest, generated = _prepare_log(project, events, work_dir, seed, say)
    plan = plan_successive(manifest, runs)
    landing = work_dir / f"landing-successive-{events}-{seed}"
    with Recorder(
        project, manifest, plan, log_dir, landing, say, generated, None, select
    ) as recorder:
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
    generated = generate_log(bench_log_config(events, seed), log_dir, say)
    return log_dir, read_manifest(log_dir), generated


def _event_days(warehouse: Any, schema: str) -> tuple[str, str]:
    """The first day of the order events and the day after the last (the backfill's span)."""
    row = warehouse.sql(
        "select cast(min(to_date(occurred_at)) as string) as first_day, "
        "cast(date_add(max(to_date(occurred_at)), 1) as string) as end_day "
        f"from {schema}.stg_orders__order_events"
    )[0]
    return row["first_day"], row["end_day"]


def _session_vars(project: DbtProject) -> tuple[int, int]:
    import yaml

    variables = yaml.safe_load((project.root / "dbt_project.yml").read_text())["vars"]
    return int(variables["session_inactivity_gap_minutes"]), int(
        variables["session_max_length_hours"]
    )


if __name__ == "__main__":
    # python -m kappa_shop.bench.runner --ingest-alone LANDING PROFILES_DIR TARGET (_ingest_alone)
    if sys.argv[1:2] != ["--ingest-alone"] or len(sys.argv) != 5:
        sys.exit(
            "usage: python -m kappa_shop.bench.runner --ingest-alone LANDING PROFILES_DIR TARGET"
        )
    sys.exit(_ingest_alone_main(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]))
