"""The measuring of one benchmark run (kappa_shop.bench.runner runs the steps): each step's
wall time, CPU time, the machine's busy share, the JVM's compiling and peak memory; dbt runs
of the project's models with each model's own time; the log generated in a process of its
own; every model checked against a full refresh of the same records, as plain dbt tables in a
schema of their own; the schemas dropped before it starts."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kappa_shop.bench.checks import check_models, model_grains
from kappa_shop.bench.plan import (
    BASELINE_MODELS,
    BASELINE_VARS,
    BATCH_ON_HISTORY_STEP,
    BATCH_ON_TENTH_STEP,
    BATCH_POINT,
    LATE_DAYS,
    LATE_POINT,
    LOOKBACK_MODELS,
    PLAIN_STEP,
    PLAIN_SUFFIX,
    PLAIN_VARS,
    SMALL_SUFFIX,
    TENTH_POINT,
    WARM_STEP,
    bench_batch_config,
    bench_log_config,
    bench_selection,
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
from kappa_shop.log.generator import GeneratorConfig, made_with, read_manifest
from kappa_shop.runtime.dbt import DbtProject


def generate_log(config: GeneratorConfig, log_dir: Path, say: Callable[[str], None]) -> Step:
    """Generate the log in a process of its own (reused when the same log is there)."""
    figures = log_dir.parent / f"{log_dir.name}.generated.json"
    if figures.is_file() and made_with(log_dir, config):
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


# another schema to build in: the project built there, and the vars to build it with
Elsewhere = tuple[DbtProject, dict[str, Any]]


class Recorder:
    """A benchmark's measuring, in this process with one SparkSession: each step's wall time,
    peak memory, CPU time, the machine's busy share and the JVM's compiling (`step`); dbt runs
    of the project's models (not the microbatch baseline) with each model's own time
    (`dbt_run`); a group of arrival batches landed and ingested (`land_and_ingest`). Its report
    starts with the generator's step. Entered, it starts from nothing (start_clean) and
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
        select: list[str] | None = None,
    ) -> None:
        records = {entry["batch"]: entry["records"] for entry in manifest["batches"]}
        self.project, self.plan, self.log_dir = project, plan, log_dir
        self.schema = project.schema
        self.landing, self.say = landing, say
        self.report = BenchReport(
            events=manifest["totals"]["valid"],
            records={name: sum(records[b] for b in group) for name, group in plan.items()}
            | (extra_records or {}),
            machine=machine(project),
            steps=[generated],
            selection=bench_selection(select),
        )
        # what a step's detail calls the models it builds
        self.scope = "the selected models" if self.report.selection else "all models"
        self.dbt_vars: dict[str, Any] = dict(BASELINE_VARS)
        # the project's models and their grains (set by the first full refresh): what the
        # equality checks compare
        self.grains: dict[str, list[str]] = {}
        self.memory = MemorySampler(os.getpid())

    def __enter__(self) -> Recorder:
        start_clean(self.project, self.landing)
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
        """Run the project's models (not the baselines; those of `--select` when given), or the
        models of `select`, and keep each model's own wall time (dbt's run results); dbt's
        result. Into the benchmark's schema, or `there`."""
        if select:
            selection = ["--select", *select]
        else:
            chosen = ["--select", *self.report.selection] if self.report.selection else []
            selection = [*chosen, "--exclude", *BASELINE_MODELS]
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
        with self.step("full refresh", f"{self.scope}, {base:,} records") as models:
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
        detail = f"{self.scope}, no contract"
        with self.plain_tables() as there, self.step(self.PLAIN, detail) as models:
            self.dbt_run(models, "--full-refresh", there=there)
        with self.step(self.WARM, f"{self.scope}, right after the plain tables") as models:
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
        generate_log(bench_batch_config(events, seed), batch_log, self.say)
        generate_log(bench_log_config(events // 10, seed), tenth_log, self.say)
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
            tenth = f"{self.scope}, {self.report.records['tenth_history']:,} records"
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
        step = self.step(f"{self.PLAIN}, {point}", f"{self.scope}, every record of {raw}")
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
            ours = differences(self.warehouse, f"{schema}.{name}", f"{plain}.{name}", "*")
            theirs = differences(self.warehouse, f"{schema}.{baseline}", f"{plain}.{name}", "*")
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


def start_clean(project: DbtProject, landing: Path) -> None:
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


def differences(warehouse: Any, left: str, right: str, columns: str) -> list[int]:
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


def difference_text(counts: list[int], left: str, right: str) -> str:
    only_left, only_right, total = counts
    if only_left == 0 and only_right == 0:
        return f"equal ({total:,} rows)"
    return f"DIFFERENT: {only_left:,} rows only in {left}, {only_right:,} only in {right}"


def compare_tables(warehouse: Any, left: str, right: str, columns: str) -> str:
    """'equal (N rows)' when both hold the same rows (as multisets), else what differs."""
    return difference_text(differences(warehouse, left, right, columns), left, right)


def machine(project: DbtProject) -> dict[str, str]:
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
