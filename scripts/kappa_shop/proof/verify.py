"""The proof: every incremental model equals a full refresh, whatever the arrival schedule.

1. Generate a log with every imperfection (seed, scale).
2. Deliver its arrival batches in K rounds, in a random order (seeded): K-1 rounds of several
   batches, in which a batch of the first overtakes an older one of the second, batches
   delivered before older ones, the stragglers-only batch (late events only), and a round
   that redelivers an already delivered batch whole (duplicates only); then two rounds of one
   batch each with late events at the edges of every reach the models declare, just inside
   and just outside it, around two midnights (kappa_shop.proof.reach_edges); and last, a round of a
   few events of one old day held back from their batches, with days of history on both
   sides, so that what a run recomputes beyond that day follows from each model's declared
   reach alone (add_old_day_batch).
3. After each round: ingest, then an incremental `dbt build` (data tests included, unit tests
   left out: the proof must catch on its own what they would) into <prefix>_incremental.
   The second arrival round first rebuilds one upstream model of each mode alone with
   `dbt run --full-refresh` (chosen by the seed), as after a change to its logic; the
   incremental builds then meet parents rebuilt since their last run. The batch ledger is
   compacted along the way (kappa_ledger_compact_after 3, unless the vars say otherwise).
   One round's build runs twice (idempotence); and at the end each model's last recorded run
   is forgotten and redone, as after a crash between writing a table and committing its
   batches: nothing may change. (Both left out with repeats=False: a quicker proof of a
   target or of Kafka, whose writes are the SQL a full proof on `local` or `local_delta`
   repeats.) With data_tests="full-refresh" the data tests run only in
   step 4: they are three quarters of a build's time on a small log, and when the diff in
   step 5 finds the two schemas equal, every data test gives the incremental tables the
   verdict it gave the full refresh (a test reads models, seeds and the shared raw tables
   only, and the diff compares every column of every model). With data_tests="none" in no
   build (the diff alone).
4. `dbt build --full-refresh` over the same raw tables into <prefix>_full.
5. Diff every model of the two schemas, key by key where the model declares its grain
   (`meta.grain`), row for row otherwise. Any difference fails the proof; so does a model of
   the selection left out of the diff, and one that wrote nothing incrementally in any build
   after the first (nothing, or a rebuild each time: the ledger's latest run of the model after
   each build says which; it proved nothing about its incremental runs).
With `selector` (a YAML selector, such as one_model_per_mode), steps 3-5 build, test and
diff its models only.

From Kafka (`kafka`): each round's batches are produced to topics of the proof's own
(`<schema prefix>_<seed>_<time>.<stream>`, created first, deleted at the end) in the
schedule's order, so the broker gives them offsets in that order, and the redelivered batch is
sent again as new records (a producer's retry); ingestion reads them with Spark's Kafka source.
The process's Spark must have the Kafka connector (kappa_shop.log.produce.connector_jars).
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import KafkaSource, checkpoint_dir, ingest
from kappa_shop.log.generator import GeneratorConfig, generate, read_manifest
from kappa_shop.log.landing import deliver
from kappa_shop.proof.diff import ModelDiff, diff_models
from kappa_shop.proof.reach_edges import (
    add_edge_batches,
    add_old_day_batch,
    choose_old_day,
    declared_reaches,
)
from kappa_shop.proof.schedule import (
    OLD_DAY,
    REACH_EDGES,
    REDELIVERY,
    Round,
    plan_schedule,
    redeliver,
)
from kappa_shop.runtime.contract import LEDGER_TABLE
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.warehouse import Warehouse, checksums

# the ledger compacts inside every proof (kappa_ledger_compact_after) unless its vars say
# otherwise: a model's ledger rows past two or three are merged, several times over a proof
PROOF_COMPACT_AFTER = 3
# When the proof's builds run the project's data tests: in every build, in the full refresh
# only (the diff carries their verdict to the incremental tables it finds equal), or in none
# (the diff alone)
DATA_TESTS = ("every-build", "full-refresh", "none")


@dataclass(frozen=True)
class VerifyConfig:
    """The knobs of one proof run (the dbt target is the DbtProject's)."""

    seed: int = 1
    events: int = 3_000
    rounds: int = 5
    # the simulated period: a longer one spreads the rounds over more days, so that a late
    # event's day lies days before the newest (what running totals and reaches must follow)
    days: float = 7.0
    schema_prefix: str = "verify"
    # dbt vars for every build of the proof (the project's settings to prove, such as
    # kappa_ledger_compact_after); raw_schema is the proof's own
    dbt_vars: dict[str, Any] = field(default_factory=dict)
    data_tests: str = "every-build"  # or "full-refresh" or "none" (DATA_TESTS)
    # a YAML selector of selectors.yml: the proof builds, tests and diffs its models only (every
    # model when None); one_model_per_mode where a target, not the models' logic, is on trial
    selector: str | None = None
    # the log from these Kafka brokers instead of landing files (the proof's own topics)
    kafka: KafkaSource | None = None
    # a round built twice and the last runs replayed (step 3); False leaves both out
    repeats: bool = True

    def validate(self) -> None:
        if self.events < 100:
            raise KappaShopError(f"--events must be at least 100 (got {self.events})")
        if not 0 < self.days <= 60:
            raise KappaShopError(f"--days must be more than 0 and at most 60 (got {self.days:g})")
        if not 3 <= self.rounds <= 50:
            # (two arrival rounds at least, whose batches overtake each other, and the
            # redelivery)
            raise KappaShopError(f"--rounds must be 3..50 (got {self.rounds})")
        if "raw_schema" in self.dbt_vars:
            raise KappaShopError("--vars cannot set raw_schema: the proof's raw tables are its own")
        if self.data_tests not in DATA_TESTS:
            raise KappaShopError(
                f"--data-tests must be one of {', '.join(DATA_TESTS)} (got {self.data_tests!r})"
            )


@dataclass
class VerifyReport:
    """The outcome of a proof run."""

    config: VerifyConfig
    schedule: list[Round]
    diffs: list[ModelDiff]
    idempotence_failures: list[str]
    failed_tests: list[str] = field(default_factory=list)
    # each build of the proof, in order: its label and how many data tests it ran
    data_tests_run: list[tuple[str, int]] = field(default_factory=list)
    # models of the selection the diff did not compare (the proof fails on any)
    undiffed: list[str] = field(default_factory=list)
    # models of the selection that wrote nothing in any incremental build after the first,
    # although every round brings them new input (the proof fails on any: it proved nothing
    # about their incremental runs)
    idle: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            all(diff.equal for diff in self.diffs)
            and not self.idempotence_failures
            and not self.failed_tests
            and not self.undiffed
            and not self.idle
        )


def _checksums(warehouse: Warehouse, schema: str, models: list[str]) -> dict[str, tuple[int, int]]:
    """Row count and an order-independent checksum of every model table."""
    sums = checksums(warehouse, [f"{schema}.{model}" for model in models])
    return {model: sums[f"{schema}.{model}"] for model in models}


@dataclass(frozen=True)
class _Log:
    """A proof's schemas, its generated log and landing zone, and its delivery schedule."""

    raw_schema: str
    incremental_schema: str
    full_schema: str
    log_dir: Path
    landing_dir: Path
    batches: list[int]
    schedule: list[Round]
    models: list[str]  # the models the proof builds and diffs (its selection's)
    kafka: KafkaSource | None = None  # with the proof's topic prefix


def _prepare(project: DbtProject, config: VerifyConfig, work_dir: Path) -> _Log:
    """Drop the proof's schemas, generate its log and plan its delivery rounds."""
    config.validate()
    prefix = f"{config.schema_prefix}_{config.seed}"
    raw_schema = f"{prefix}_raw"
    if work_dir.exists():
        shutil.rmtree(work_dir)
    warehouse = project.warehouse()
    for schema in (raw_schema, f"{prefix}_incremental", f"{prefix}_full"):
        warehouse.sql(f"drop schema if exists {schema} cascade")
    shutil.rmtree(checkpoint_dir(warehouse, raw_schema), ignore_errors=True)

    generated = GeneratorConfig(
        seed=config.seed,
        events=config.events,
        days=config.days,
        batches=max(config.rounds * 2, 6),
        late_fraction=0.08,
        duplicate_fraction=0.03,
        conflict_fraction=0.005,
        malformed_fraction=0.01,
    )
    log_dir = work_dir / "log"
    generate(generated, log_dir, progress=lambda message: None)
    batches = [entry["batch"] for entry in read_manifest(log_dir)["batches"]]
    manifest = project.invoke("parse", "--quiet")
    # late events at the edges of every reach the models declare, each side a batch of its
    # own, delivered alone after every other round; then a few events of an old day, alone
    held_back = choose_old_day(log_dir)
    edges = add_edge_batches(log_dir, declared_reaches(manifest), held_back)
    old_day = add_old_day_batch(log_dir, held_back) if held_back is not None else None
    schedule = plan_schedule(batches, config.rounds, config.seed)
    schedule += [Round((number,), REACH_EDGES) for number in edges]
    schedule += [Round((old_day,), OLD_DAY)] if old_day is not None else []
    models = _selected_models(project, config.selector)
    # the second arrival round rebuilds an upstream model of each mode alone first
    second = [index for index, entry in enumerate(schedule) if entry.kind == "arrival"][1]
    rebuilt = _upstream_models(manifest, models, config.seed)
    schedule[second] = replace(schedule[second], rebuilt=rebuilt)
    kafka = None
    if config.kafka is not None:
        # topics of this proof's own: empty at its start, whatever ran before
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        kafka = replace(config.kafka, topic_prefix=f"{config.kafka.topic_prefix}{prefix}_{stamp}.")
    return _Log(
        raw_schema=raw_schema,
        incremental_schema=f"{prefix}_incremental",
        full_schema=f"{prefix}_full",
        log_dir=log_dir,
        landing_dir=work_dir / "landing",
        batches=batches + edges + ([old_day] if old_day is not None else []),
        schedule=schedule,
        models=models,
        kafka=kafka,
    )


def _selected_models(project: DbtProject, selector: str | None) -> list[str]:
    """The models the proof builds: its selector's, or those of a plain `dbt build`."""
    selected = ("--selector", selector) if selector else ()
    listed = project.invoke(
        "ls", "--resource-type", "model", "--output", "name", "--log-level", "none", *selected
    )
    return sorted(listed)


def contract_mode(node: Any) -> str | None:
    """How an exact_incremental model keeps up (the package's kappa._contract_mode): 'batches',
    'days' or 'keys'; None for any other model."""
    if node.config.materialized != "exact_incremental":
        return None
    partition_by = node.config.get("partition_by") or []
    columns = [partition_by] if isinstance(partition_by, str) else list(partition_by)
    if columns and columns[0] == "_ingestion_batch_id":
        return "batches"
    return "keys" if node.config.get("recompute_key") else "days"


def _upstream_models(manifest: Any, models: list[str], seed: int) -> tuple[str, ...]:
    """One model of each mode that another model of the proof reads, chosen by the seed: what
    the proof rebuilds alone with --full-refresh in one round (the models downstream then
    meet a parent rebuilt since their last run)."""
    nodes = {
        node.name: node
        for node in manifest.nodes.values()
        if node.resource_type == "model" and node.name in models
    }
    parents = {
        manifest.nodes[parent].name
        for node in nodes.values()
        for parent in node.depends_on.nodes
        if parent in manifest.nodes
    }
    rng = random.Random(seed * 104729 + 3)
    chosen = []
    for mode in ("batches", "days", "keys"):
        candidates = sorted(
            name for name in parents & nodes.keys() if contract_mode(nodes[name]) == mode
        )
        if candidates:
            chosen.append(rng.choice(candidates))
    return tuple(chosen)


def _land(project: DbtProject, log: _Log, number: int, entry: Round) -> tuple[str, Any]:
    """Deliver round `number` of the schedule and ingest it: what was delivered (files landed,
    or records produced) and the ingestion report."""
    source: Path | KafkaSource = log.landing_dir
    if log.kafka is not None:
        from kappa_shop.log.produce import produce

        source = log.kafka
        produced = produce(
            project.spark(),
            log.log_dir,
            entry.batches,  # a redelivered batch: its records sent again
            source.bootstrap_servers,
            progress=lambda message: None,
            topic_prefix=source.topic_prefix,
            at_log_offsets=False,
            options=source.options,
        )
        delivered = f"{produced.records} records produced"
    elif entry.kind == REDELIVERY:
        files = redeliver(log.log_dir, log.landing_dir, entry.batches[0], number)
        delivered = f"{files} files"
    else:
        files = deliver(log.log_dir, log.landing_dir, entry.batches).files_delivered
        delivered = f"{files} files"
    report = ingest(
        project.spark(),
        source,
        log.raw_schema,
        progress=lambda message: None,
        warehouse=project.warehouse(),
    )
    return delivered, report


def verify(
    project: DbtProject,
    config: VerifyConfig,
    work_dir: Path,
    progress: Callable[[str], None] = print,
) -> VerifyReport:
    """Run the proof; return its report (the caller decides the exit status)."""
    if config.selector:
        _check_selector(project.root, config.selector)
    if config.kafka is not None:
        from kappa_shop.runtime.kafka import check_brokers, check_connector

        check_connector(project.spark())
        if not config.kafka.options:  # (a broker that needs TLS or SASL does not answer a probe)
            check_brokers(config.kafka.bootstrap_servers)
    log = _prepare(project, config, work_dir)
    try:
        report = _prove(project, config, log, progress)
    except BaseException:
        _delete_topics(project, log, quietly=True)
        raise
    _delete_topics(project, log)
    return report


def _delete_topics(project: DbtProject, log: _Log, quietly: bool = False) -> None:
    """Delete a proof's own Kafka topics (the raw tables keep every record and its offset);
    `quietly` after a failure, which is what the caller is to see."""
    if log.kafka is None:
        return
    from kappa_shop.runtime.kafka import delete_topics

    try:
        delete_topics(
            project.spark(), log.kafka.bootstrap_servers, log.kafka.topic_names(), log.kafka.options
        )
    except Exception:
        if not quietly:
            raise


def _schedule_line(config: VerifyConfig, log: _Log) -> str:
    """The proof's first line: its log, its rounds and what its builds run."""
    return (
        f"Proof: seed {config.seed}, ~{config.events:,} events, {len(log.batches)} arrival "
        f"batches in {len(log.schedule)} rounds: "
        + "  ".join(
            {REDELIVERY: "re", REACH_EDGES: "edges", OLD_DAY: "old-day"}.get(entry.kind, "")
            + "["
            + ",".join(str(number) for number in entry.batches)
            + "]"
            + (f"+rebuilt({','.join(entry.rebuilt)})" if entry.rebuilt else "")
            for entry in log.schedule
        )
        + {
            "every-build": "; data tests in every build",
            "full-refresh": "; data tests in the full refresh (the diff carries them over)",
            "none": "; no data tests (the diff alone)",
        }[config.data_tests]
        + (f"; the models of selector {config.selector}" if config.selector else "")
        + (
            f"; from Kafka at {log.kafka.bootstrap_servers}, topics {log.kafka.topic_prefix}*"
            if log.kafka
            else ""
        )
        + ("" if config.repeats else "; no round built twice, no replay (--no-repeats)")
    )


class _Builds:
    """The proof's dbt builds: incremental ones into its incremental schema, the full refresh
    into its full one, both reading its raw tables, with the proof's vars; the data tests each
    ran and those that failed."""

    def __init__(self, project: DbtProject, config: VerifyConfig, log: _Log) -> None:
        self.config = config
        self.incremental = project.elsewhere(log.incremental_schema, log.raw_schema)
        self.full = project.elsewhere(log.full_schema, log.raw_schema)
        self.dbt_vars = {"kappa_ledger_compact_after": PROOF_COMPACT_AFTER, **config.dbt_vars}
        # the proof stands on its own: unit tests (which run in every ordinary `dbt build`)
        # are left out, so a bug they would catch must show up here as a difference
        selected = ("--selector", config.selector) if config.selector else ()
        # (--exclude-resource-type last: a build without data tests adds "test" to it)
        self.build = ("build", "--quiet", *selected, "--exclude-resource-type", "unit_test")
        self.failed_tests: list[str] = []
        self.data_tests_run: list[tuple[str, int]] = []

    def run(self, label: str, full_refresh: bool = False) -> Any:
        """An incremental build or the full refresh; failing data tests are recorded (the proof
        fails) but do not stop it, so the diff is still shown. A model that fails stops the
        proof."""
        config = self.config
        tested = config.data_tests == "every-build" or (
            full_refresh and config.data_tests == "full-refresh"
        )
        untested = () if tested else ("test",)
        refresh = ("--full-refresh",) if full_refresh else ()
        project = self.full if full_refresh else self.incremental
        result = project.invoke(
            *self.build, *untested, *refresh, dbt_vars=self.dbt_vars, tolerate_failures=True
        )
        tests = [item for item in result.results if item.node.resource_type == "test"]
        self.data_tests_run.append((label, len(tests)))
        for item in result.results:
            status = str(item.status)
            if item.node.resource_type == "model" and status == "error":
                raise KappaShopError(f"{label}: model {item.node.name} failed: {item.message}")
            if status in ("fail", "error"):
                self.failed_tests.append(f"{label}: {item.node.name} ({status})")
        return result

    def rebuild_alone(self, models: tuple[str, ...]) -> None:
        """`dbt run --full-refresh --select <models>`, as after a change to their logic."""
        self.incremental.invoke(
            "run", "--quiet", "--full-refresh", "--select", *models, dbt_vars=self.dbt_vars
        )


def _prove(
    project: DbtProject, config: VerifyConfig, log: _Log, progress: Callable[[str], None]
) -> VerifyReport:
    """The proof's rounds, full refresh and diff (module docstring)."""
    warehouse = project.warehouse()
    progress(_schedule_line(config, log))
    builds = _Builds(project, config, log)
    models, wrote_incrementally, idempotence_failures = _rounds(builds, log, progress)
    result = builds.run(label="full refresh", full_refresh=True)
    progress("  full refresh into " + log.full_schema + " done")
    grains = {
        item.node.name: list((item.node.config.meta or {}).get("grain", []))
        for item in result.results
        if item.node.resource_type == "model"
    }
    diffs = diff_models(
        warehouse, {model: grains.get(model, []) for model in models}, log.incremental_schema,
        log.full_schema,
    )  # fmt: skip
    return VerifyReport(
        config,
        log.schedule,
        diffs,
        idempotence_failures,
        builds.failed_tests,
        builds.data_tests_run,
        undiffed=sorted(set(log.models) - set(models)),
        idle=sorted(set(log.models) - wrote_incrementally),
    )


def _rounds(
    builds: _Builds, log: _Log, progress: Callable[[str], None]
) -> tuple[list[str], set[str], list[str]]:
    """Each round landed, ingested and built incrementally (one of them twice), then each
    model's last run forgotten and redone (neither with repeats=False): the models built,
    those that wrote in a build after the first, and what building twice or redoing changed
    (nothing, if all is well)."""
    project, schedule = builds.incremental, log.schedule
    warehouse, schema = project.warehouse(), log.incremental_schema
    idempotence_failures: list[str] = []
    wrote_incrementally: set[str] = set()  # models that wrote in a build after the first
    idempotence_round = len(schedule) // 2 if builds.config.repeats else 0
    models: list[str] = []
    for number, entry in enumerate(schedule, start=1):
        delivered, report = _land(project, log, number, entry)
        if entry.rebuilt:
            builds.rebuild_alone(entry.rebuilt)
            progress(f"  round {number}: rebuilt {', '.join(entry.rebuilt)} alone")
        result = builds.run(label=f"round {number}")
        models = sorted(
            {item.node.name for item in result.results if item.node.resource_type == "model"}
        )
        if number > 1:
            wrote_incrementally |= _models_that_wrote(result) & _ran_incrementally(
                warehouse, schema
            )
        progress(
            f"  round {number}/{len(schedule)}: {delivered}, ingestion batch(es) "
            f"{','.join(str(batch.ingestion_batch_id) for batch in report.batches)}; "
            f"incremental build of {len(models)} models done"
        )
        if number == idempotence_round:
            before = _checksums(warehouse, schema, models)
            builds.run(label=f"round {number}, built again")
            after = _checksums(warehouse, schema, models)
            idempotence_failures += [
                f"building round {number} twice changed {model}"
                for model in models
                if before[model] != after[model]
            ]
    if not builds.config.repeats:
        return models, wrote_incrementally, idempotence_failures
    before = _checksums(warehouse, schema, models)
    _forget_last_runs(warehouse, schema)
    builds.run(label="replay of the last runs")
    after = _checksums(warehouse, schema, models)
    idempotence_failures += [
        f"redoing the last recorded run changed {model}"
        for model in models
        if before[model] != after[model]
    ]
    progress("  replayed each model's last run (as after a crash before its commit)")
    return models, wrote_incrementally, idempotence_failures


# what a model's run result says when the run wrote nothing (the materialization's noop)
_NOTHING_WRITTEN = ("up to date through ingestion batch", "touch none of its partitions")


def _models_that_wrote(result: Any) -> set[str]:
    """The models a build wrote (rows of new batches, recomputed days or buckets, a rebuild)."""
    return {
        item.node.name
        for item in result.results
        if item.node.resource_type == "model"
        and str(item.status) == "success"
        and not any(phrase in str(item.message or "") for phrase in _NOTHING_WRITTEN)
    }


def _ran_incrementally(warehouse: Warehouse, schema: str) -> set[str]:
    """The models whose latest recorded run was an incremental one, not a rebuild: a table the
    contract takes for another format is rebuilt by every run, which writes and proves nothing
    about incremental runs. (A model's latest run in the batch ledger is its row of the highest
    first batch: a rebuild's row, and a compaction's, start at batch 1.)"""
    rows = warehouse.sql(
        f"select model_name from (select model_name, refresh_mode, row_number() over ("
        f"partition by model_name order by first_batch_id desc) as latest "
        f"from {schema}.{LEDGER_TABLE}) where latest = 1 and refresh_mode = 'incremental'"
    )
    return {str(row["model_name"]) for row in rows}


def _check_selector(root: Path, name: str) -> None:
    """Refuse, before anything is generated or built, a selector the project does not define."""
    import yaml

    path = root / "selectors.yml"
    defined = yaml.safe_load(path.read_text())["selectors"] if path.is_file() else []
    names = [selector["name"] for selector in defined]
    if name not in names:
        raise KappaShopError(
            f"--selector {name}: no such selector in {path.name} (it defines: "
            f"{', '.join(names) or 'none'})"
        )


def _forget_last_runs(warehouse: Warehouse, schema: str) -> None:
    """Drop each model's latest ledger range, so the next build redoes it."""
    ledger = f"{schema}.{LEDGER_TABLE}"
    latest = warehouse.sql(
        f"select model_name, max(first_batch_id) as first_batch_id from {ledger} "
        "group by model_name"
    )
    for row in latest:
        warehouse.sql(
            f"alter table {ledger} drop if exists partition "
            f"(model_name = '{row['model_name']}', first_batch_id = {row['first_batch_id']})"
        )


def format_report(report: VerifyReport) -> str:
    """The per-model table people read, and the verdict."""
    header = (
        f"{'model':<44} {'grain':<28} {'incremental':>11} {'full':>8} "
        f"{'only incr':>9} {'only full':>9} {'differ':>7}  result"
    )
    lines = ["", header, "-" * len(header)]
    for diff in report.diffs:
        grain = ",".join(diff.grain) or "(whole row)"
        lines.append(
            f"{diff.model:<44} {grain[:28]:<28} {diff.incremental_rows:>11,} {diff.full_rows:>8,} "
            f"{diff.only_in_incremental:>9,} {diff.only_in_full:>9,} {diff.differing:>7,}  "
            + ("equal" if diff.equal else "DIFFERENT")
        )
        if not diff.equal:
            lines += [f"    {sample}" for sample in diff.sample]
    lines += [f"IDEMPOTENCE: {failure}" for failure in report.idempotence_failures]
    lines += [f"FAILED TEST: {failure}" for failure in report.failed_tests]
    lines += [f"NOT DIFFED: {model}, a model of the proof's selection" for model in report.undiffed]
    lines += [
        f"IDLE: {model} wrote nothing in any incremental build (nothing, or a rebuild each "
        "time), although every round brings it new input"
        for model in report.idle
    ]
    if report.data_tests_run:
        lines.append(
            "Data tests run per build: "
            + ", ".join(f"{label} {count}" for label, count in report.data_tests_run)
        )
    verdict = "PASSED" if report.passed else "FAILED"
    differing = sum(1 for diff in report.diffs if not diff.equal)
    lines.append(
        f"Proof {verdict} (seed {report.config.seed}): {len(report.diffs) - differing} of "
        f"{len(report.diffs)} models equal their full refresh"
        + (
            f"; {len(report.idempotence_failures)} idempotence failures"
            if report.idempotence_failures
            else ""
        )
        + (f"; {len(report.failed_tests)} failed data tests" if report.failed_tests else "")
        + (f"; {len(report.undiffed)} models not diffed" if report.undiffed else "")
        + (f"; {len(report.idle)} models idle after their first build" if report.idle else "")
    )
    return "\n".join(lines)
