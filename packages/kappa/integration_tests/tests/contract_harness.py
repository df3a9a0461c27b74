"""Drives the package's integration project (one directory up) through dbt in this process.

A schedule delivers the hand-written log (seeds/events.csv) in its own order, one ingestion
batch per step, and runs `dbt run` after each, every model compared row for row with a full
refresh of the log delivered so far (built once per pytest run by the package as written);
then the same log is built with `--full-refresh` into a schema of its own and compared too.
Every dbt command runs through dbtRunner in this process, so one SparkSession serves them all
(dbt-spark `method: session` reuses it); each build has schemas of its own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
SEED_SCHEMA = "kappa_it_seeds"  # where every copy's seed log is (dbt_project.yml, +schema)
MODELS = (
    "stg_events",
    "daily_totals",
    "daily_averages",
    "rolling_hour",
    "first_purchases",
    "user_state",
    "user_tiers",
)
# Each schedule is a list of steps; a step delivers the listed arrival groups of the seed log
# as one ingestion batch, then runs dbt. Every schedule delivers the whole log.
SCHEDULES: dict[str, list[list[int]]] = {
    # the late changes at the edges of the models' reach, each delivered alone after the rest:
    # group 4 lands 20 minutes inside the one-hour reach of midnight (it changes the next
    # day's rows), group 5 ten minutes outside it (it changes its own day only, and moves a
    # first purchase a day earlier, emptying the later day) and 10 minutes after the next
    # midnight (inside the one-hour reach after: it changes the day before's rows)
    "reach_edges": [[1, 2, 3, 6, 7], [4], [5]],
    # out of order: day three and a late event first, the redeliveries after the originals,
    # then the two late groups alone in the other order
    "shuffled": [[6, 2], [7], [1, 3], [5], [4]],
    # a user's close alone, which empties the key bucket of a key built before (a merge must
    # delete its row), then the two late groups together in one batch (the Delta check's:
    # short)
    "late_together": [[1, 2, 3, 6], [7], [4, 5]],
}
# A schedule's incremental runs compact the ledger: a model's rows merged beyond two
# (_compact_batch_ledger), so that every schedule also checks compacted ledgers.
LEDGER_COMPACT_AFTER = 2


class DbtFailure(Exception):
    """A dbt command that failed; its message holds what dbt said (the error lines). Not an
    AssertionError: a failure that a check did not expect is a crash, never a catch."""


class Reason(StrEnum):
    """Why a check failed: which of the contract's promises it found broken."""

    DIFFERENCE = "difference"  # incremental tables differ from the full refresh of the same log
    WRONG_ROWS = "wrong_rows"  # a table does not hold what the log says (worked out by hand)
    MISSING_ERROR = "missing_error"  # a run that must stop with the contract's error went ahead
    WRONG_MESSAGE = "wrong_message"  # the contract's error came without what it must name
    LEDGER = "ledger"  # a model's ledger rows do not tile 1..N, or outgrow their limit
    LEFTOVER_KEPT = "leftover_kept"  # a table left by a killed full refresh is still there
    NOT_RECOVERED = "not_recovered"  # a run after a kill's leftovers failed on them
    WRONG_REPORT = "wrong_report"  # a run's closing line on what it recomputed is not true


class CheckFailed(AssertionError):
    """A check found a promise of the contract broken, for `reason`."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def require(condition: bool, reason: Reason, detail: str) -> None:
    """Fail the check for `reason` unless `condition` holds."""
    if not condition:
        raise CheckFailed(reason, detail)


def _target_path(target: str, arguments: Sequence[str]) -> str:
    """dbt's target path for a command on `target` into the schemas KAPPA_IT_SCHEMA and
    KAPPA_IT_LOG_SCHEMA name, with the `--vars` among `arguments`: one per such destination.
    dbt keeps its partial-parsing state in the target path and parses the whole project again
    when the profile (its schema) or the vars differ from the last command's there; with a
    path per destination each is parsed once (a full parse of this project: ~1.8 s)."""
    variables = arguments[arguments.index("--vars") + 1] if "--vars" in arguments else ""
    digest = hashlib.sha1(variables.encode()).hexdigest()[:8] if variables else "novars"
    schemas = f"{os.environ['KAPPA_IT_SCHEMA']}-{os.environ['KAPPA_IT_LOG_SCHEMA']}"
    return f"target/{target}-{schemas}-{digest}"


@dataclass
class Project:
    """A copy of the package with its integration project, in a directory of its own."""

    root: Path  # the copy's integration_tests directory
    prefix: str  # what every schema of this copy starts with
    logged: list[str] = field(default_factory=list)  # the last command's info-level Jinja logs
    # the last command's statements to Spark: (connection, SQL); a model's connection is
    # named by its unique id (model.<project>.<name>), the hooks' `master`
    statements: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def copy_of(cls, package: Path, destination: Path, prefix: str) -> Project:
        """Copy `package` (with its integration_tests) to `destination` and install it there."""
        shutil.copytree(
            package,
            destination,
            ignore=shutil.ignore_patterns(
                "target", "dbt_packages", "logs", "spark-warehouse", "metastore_db", "__pycache__"
            ),
        )
        project = cls(root=destination / "integration_tests", prefix=prefix)
        (project.root / "logs").mkdir(exist_ok=True)
        project.dbt(["deps", "--quiet"], schema="unused")
        return project

    def dbt(
        self,
        arguments: Sequence[str],
        schema: str,
        log_schema: str | None = None,
        target: str = "local",
    ) -> Any:
        """Run one dbt command against `schema` (and the log in `log_schema`) on `target`
        (`local`: parquet tables, `local_delta`: Delta tables); raise DbtFailure with dbt's
        error messages when it fails."""
        from dbt.cli.main import dbtRunner

        os.environ["KAPPA_IT_SCHEMA"] = schema
        os.environ["KAPPA_IT_LOG_SCHEMA"] = log_schema or f"{self.prefix}_log"
        command = [
            *arguments,
            *("--target", target),
            *("--project-dir", str(self.root)),
            *("--profiles-dir", str(self.root)),
        ]
        if arguments[0] != "deps":  # the one command here that reads no project
            command += ["--target-path", _target_path(target, arguments)]
        self.logged.clear()
        self.statements.clear()
        outcome = dbtRunner(callbacks=[self._keep_logged]).invoke(command)
        if outcome.success:
            return outcome.result
        messages = []
        if outcome.exception is not None:
            messages.append(str(outcome.exception))
        for result in getattr(outcome.result, "results", None) or []:
            if getattr(result, "status", None) in ("error", "fail", "runtime error"):
                messages.append(f"{result.node.name}: {result.message}")
        raise DbtFailure(f"dbt {' '.join(arguments)} failed: " + " | ".join(messages))

    def _keep_logged(self, event: Any) -> None:
        """A dbt event callback: keeps what the package logs at info level (log(info=true))
        and every statement dbt sends to Spark."""
        if event.info.name == "JinjaLogInfo":
            self.logged.append(event.info.msg)
        elif event.info.name == "SQLQuery":
            self.statements.append((event.data.conn_name, event.data.sql))

    def model_statements(self) -> dict[str, list[str]]:
        """The statements the last command sent, per model (models that sent none are not
        listed)."""
        sent: dict[str, list[str]] = {}
        for connection, sql in self.statements:
            if connection.startswith("model."):
                sent.setdefault(connection.split(".")[-1], []).append(sql)
        return sent

    def report(self) -> list[str]:
        """The lines the last command ended with for the models it recomputed (on-run-end)."""
        return [line for line in self.logged if line.startswith("kappa: ")]

    def seed(self) -> None:
        """Load the hand-written log (once per copy: every build reads it)."""
        self.dbt(["seed", "--quiet"], schema=f"{self.prefix}_seed")

    def deliver(self, arrivals: Sequence[int], log_schema: str, receipt: bool = True) -> None:
        """Ingest the seed log's rows of `arrivals` as the next ingestion batch of
        `log_schema`, as an ingestion job would: the rows under a new `_ingestion_batch_id`,
        then its receipt (`receipt=False`: a batch whose ingestion was killed before it)."""
        session = spark()
        session.sql(f"create schema if not exists {log_schema}")
        session.sql(
            f"create table if not exists {log_schema}.raw_events (event_id string, user_id string,"
            " kind string, event_at timestamp, amount int, _ingestion_batch_id bigint)"
            " using parquet partitioned by (_ingestion_batch_id)"
        )
        session.sql(
            f"create table if not exists {log_schema}.ingestion_batches"
            " (ingestion_batch_id bigint) using parquet"
        )
        last = session.sql(
            f"select coalesce(max(_ingestion_batch_id), 0) from {log_schema}.raw_events"
        ).first()[0]
        session.sql(
            f"insert into {log_schema}.raw_events partition (_ingestion_batch_id = {last + 1})"
            " select event_id, user_id, kind, cast(event_at as timestamp), cast(amount as int)"
            f" from {SEED_SCHEMA}.events where arrival in ({', '.join(map(str, arrivals))})"
        )
        if receipt:
            session.sql(f"insert into {log_schema}.ingestion_batches values ({last + 1})")

    def run(self, schema: str, log_schema: str, *extra: str, target: str = "local") -> Any:
        """`dbt run` of every model into `schema`, reading the log in `log_schema`."""
        return self.dbt(
            ["run", "--quiet", *extra], schema=schema, log_schema=log_schema, target=target
        )


def spark() -> Any:
    """The SparkSession dbt started (or found) in this process."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


def reset(*schemas: str) -> None:
    """Drop these schemas and what they hold."""
    for schema in schemas:
        spark().sql(f"drop schema if exists {schema} cascade")


def differences(
    left_schema: str, right_schema: str, models: Sequence[str] = MODELS
) -> dict[str, tuple[int, int]]:
    """Per model whose tables differ: (rows only in left, rows only in right), multiset-wise
    (as EXCEPT ALL counts them both ways), every model in one query: each distinct row's count
    on either side, summed where one side has more."""
    branches = []
    for model in models:
        listed = ", ".join(f"`{name}`" for name in spark().table(f"{left_schema}.{model}").columns)
        branches.append(
            f"select '{model}' as model, coalesce(sum(greatest(in_left - in_right, 0)), 0) as"
            " only_left, coalesce(sum(greatest(in_right - in_left, 0)), 0) as only_right from"
            f" (select {listed}, sum(in_left) as in_left, sum(in_right) as in_right from"
            f" (select {listed}, 1 as in_left, 0 as in_right from {left_schema}.{model}"
            f" union all select {listed}, 0, 1 from {right_schema}.{model})"
            f" group by {listed})"
        )
    found = {}
    for row in spark().sql(" union all ".join(branches)).collect():
        if row["only_left"] or row["only_right"]:
            found[row["model"]] = (int(row["only_left"]), int(row["only_right"]))
    return found


def rows(sql: str) -> list[tuple]:
    """The rows of a query, as sorted tuples."""
    return sorted(tuple(row) for row in spark().sql(sql).collect())


def check_schedule(project: Project, name: str, target: str = "local") -> None:
    """Deliver the log by schedule `name`, building incrementally on `target` after every step
    (and once more with nothing new), the ledger compacted as it grows, each model's ledger one
    unbroken, compacted range after every run; require every model after every run equal to a
    full refresh of the log delivered so far by the package as written (reference_refreshes),
    so that a seeded bug stops the check at the first run it shows in; then build a full
    refresh of the whole log with `project`'s own package (the package as written built it
    already), and require the incremental tables equal to it and it right on the log's hard
    cases."""
    incremental = f"{project.prefix}_{name}" + ("_delta" if target == "local_delta" else "")
    full = f"{incremental}_full"
    log_schema = f"{incremental}_log"
    reset(incremental, full, log_schema)
    references = reference_refreshes(name, target)
    compact = ("--vars", f"{{kappa_ledger_compact_after: {LEDGER_COMPACT_AFTER}}}")
    where = f"schedule {name} on {target}"
    for number, (step, reference) in enumerate(zip(SCHEDULES[name], references, strict=True)):
        project.deliver(step, log_schema)
        project.run(incremental, log_schema, *compact, target=target)
        check_ledger(incremental)
        _require_equal(incremental, reference, f"{where}, run {number + 1} (groups {step})")
    project.run(incremental, log_schema, *compact, target=target)  # nothing new: no change
    check_ledger(incremental)
    _require_equal(incremental, references[-1], f"{where}, the run with nothing new")
    if REFERENCE_PROJECT and project is REFERENCE_PROJECT[0]:  # its full refresh is built
        full = references[-1]
    else:
        project.run(full, log_schema, "--full-refresh", target=target)
        _require_equal(incremental, full, f"{where}, against this package's own full refresh")
    check_hard_cases(full)


def _require_equal(incremental: str, full: str, when: str) -> None:
    found = differences(incremental, full)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"{when}: incremental tables differ from the full refresh (model: rows only "
        f"incremental, rows only full refresh): {found}",
    )


# The package as written (package_copy's project) and the full refreshes it built, per
# (schedule, target): one schema per step, the log delivered up to that step
REFERENCE_PROJECT: list[Project] = []
_REFERENCES: dict[tuple[str, str], list[str]] = {}


def reference_refreshes(name: str, target: str) -> list[str]:
    """The schemas of the full refreshes of schedule `name`'s log after each of its steps, on
    `target`, built by the package as written (package_copy's copy, never a mutant's) the first
    time a pytest run asks for them."""
    if (name, target) not in _REFERENCES:
        (project,) = REFERENCE_PROJECT
        base = f"{project.prefix}_reference_{name}" + ("_delta" if target == "local_delta" else "")
        schemas = [f"{base}_{number}" for number in range(1, len(SCHEDULES[name]) + 1)]
        reset(f"{base}_log", *schemas)
        for step, schema in zip(SCHEDULES[name], schemas, strict=True):
            project.deliver(step, f"{base}_log")
            project.run(schema, f"{base}_log", "--full-refresh", target=target)
        _REFERENCES[name, target] = schemas
    return _REFERENCES[name, target]


def check_ledger(schema: str, limit: int = LEDGER_COMPACT_AFTER) -> None:
    """Each model's rows in the batch ledger of `schema` tile 1..N, in order, with no gap or
    overlap (what consumed_through requires of them), and number at most `limit` (with var
    kappa_ledger_compact_after at `limit`, every model's limit is the var itself)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for model, first, last in rows(
        f"select model_name, first_batch_id, last_batch_id from {schema}.kappa_batch_ledger"
    ):
        ranges.setdefault(model, []).append((first, last))
    for model, runs in ranges.items():
        starts = [first for first, _ in runs]
        expected_starts = [1] + [last + 1 for _, last in runs[:-1]]
        require(
            starts == expected_starts,
            Reason.LEDGER,
            f"the ledger of {schema}.{model} is not one unbroken range: {runs}",
        )
        require(
            len(runs) <= limit,
            Reason.LEDGER,
            f"the ledger of {schema}.{model} holds {len(runs)} rows, over its limit {limit}",
        )


def check_hard_cases(schema: str) -> None:
    """What the full refresh of the whole log must hold, worked out by hand from the log."""

    def holds(sql: str, expected: list[tuple], why: str) -> None:
        found = rows(sql)
        require(found == expected, Reason.WRONG_ROWS, f"{why}: {found} != {expected}")

    holds(
        f"select count(*), count(distinct event_id) from {schema}.stg_events",
        [(19, 19)],
        "each of the 19 events once",
    )
    holds(
        f"select amount from {schema}.stg_events where event_id = 'e07'",
        [(6,)],
        "the conflicting redelivery of e07 (amount 60) lost to the original (the first"
        " delivery wins; in one batch, the smaller amount)",
    )
    holds(
        f"select event_id, events_in_last_hour, events_in_next_hour from {schema}.rolling_hour"
        " where event_id in ('e04', 'e09', 'e19')",
        [("e04", 1, 3), ("e09", 3, 1), ("e19", 1, 2)],
        "e09 (u3, 00:05 on day two) has e04 (23:10) and the late e11 (23:40) of day one"
        " within its hour; e04 has them in the hour after it; u7's e19 (23:50 on day three)"
        " has the late e18 (00:10 on day four) in its next hour",
    )
    holds(
        f"select user_id, first_event_id from {schema}.first_purchases",
        [
            ("u1", "e15"),
            ("u2", "e02"),
            ("u3", "e04"),
            ("u4", "e12"),
            ("u5", "e10"),
            ("u7", "e19"),
            ("u8", "e05"),
        ],
        "first purchases: u1's moved to the late e15 (29 February); u4's to the late e12,"
        " which leaves day two with none (its partition emptied); u5's and u7's on day three",
    )
    holds(
        f"select user_id, last_event_id, events, total_amount from {schema}.user_state",
        [
            ("u1", "e13", 5, 26),
            ("u2", "e17", 4, 21),
            ("u3", "e09", 3, 12),
            ("u4", "e08", 2, 3),
            ("u5", "e10", 1, 8),
            ("u7", "e18", 2, 3),
        ],
        "u8 closed (alone in bucket 1, which is left empty); u2's latest is e17, tied in"
        " time with e14 and later by id",
    )
    holds(
        f"select user_id, tier from {schema}.user_tiers",
        [
            ("u1", "gold"),
            ("u2", "gold"),
            ("u3", "basic"),
            ("u4", "basic"),
            ("u5", "basic"),
            ("u7", "basic"),
        ],
        "tiers from the total amounts",
    )
    holds(
        f"select cast(event_date as string), events, amount from {schema}.daily_totals",
        [
            ("2024-02-29", 1, 2),
            ("2024-03-01", 7, 38),
            ("2024-03-02", 4, 13),
            ("2024-03-03", 6, 23),
            ("2024-03-04", 1, 1),
        ],
        "daily totals",
    )


def expect_failure(action: Callable[[], Any], error: str, *details: str) -> str:
    """Run `action`, which must stop with the contract's error `error` and name every one of
    `details`; return its message. Another error is not the check's to judge: it propagates
    (a crash, never a catch)."""
    try:
        action()
    except DbtFailure as failure:
        message = str(failure)
        if error not in message:
            raise
        missing = [detail for detail in details if detail not in message]
        require(not missing, Reason.WRONG_MESSAGE, f"{error!r} without {missing!r}: {message}")
        return message
    raise CheckFailed(Reason.MISSING_ERROR, f"expected the error {error!r}, but the run succeeded")


def check_receipts(project: Project) -> None:
    """A batch without its receipt is not read; a gap in the receipts stops the run."""
    schema = f"{project.prefix}_receipts"
    log_schema = f"{schema}_log"
    reset(schema, log_schema)
    project.deliver([1], log_schema)
    project.deliver([2], log_schema, receipt=False)  # ingestion killed before its receipt
    project.run(schema, log_schema)
    read = rows(f"select distinct _ingestion_batch_id from {schema}.stg_events")
    require(read == [(1,)], Reason.WRONG_ROWS, f"a batch without its receipt was read: {read}")
    project.deliver([3], log_schema)  # receipts 1 and 3: batch 2 is missing
    expect_failure(lambda: project.run(schema, log_schema), "have a gap", "batch 2 is missing")


def check_ledger_gap(project: Project) -> None:
    """A model whose ledger is not one unbroken range (a row lost) stops its run, naming the
    range and the rebuild."""
    schema = f"{project.prefix}_ledger_gap"
    log_schema = f"{schema}_log"
    reset(schema, log_schema)
    select = ("--select", "stg_events")
    for arrivals in ([1], [2]):
        project.deliver(arrivals, log_schema)
        project.run(schema, log_schema, *select)
    spark().sql(
        f"alter table {schema}.kappa_batch_ledger"
        " drop partition (model_name = 'stg_events', first_batch_id = 1)"
    )
    expect_failure(
        lambda: project.run(schema, log_schema, *select),
        "is not one unbroken range 1..2",
        "(it starts at 2 and covers 1 batches)",
        "dbt build --full-refresh --select stg_events+",
    )


def check_column_change(project: Project) -> None:
    """A model whose columns changed stops its incremental run, naming the difference: a run
    with nothing new as well (its SQL is not the one its last write recorded, so its columns
    are checked) as a run with new input."""
    schema = f"{project.prefix}_columns"
    log_schema = f"{schema}_log"
    reset(schema, log_schema)
    project.deliver([1], log_schema)
    project.run(schema, log_schema)
    for step in ("nothing new", "new input"):
        if step == "new input":
            project.deliver([2], log_schema)
        expect_failure(
            lambda: project.run(schema, log_schema, "--vars", "{add_column: true}"),
            "has other columns than its model now",
            "(new in the model: added_column (int))",
            "dbt build --full-refresh --select stg_events+",
        )


def check_no_model_statements(project: Project, log_schema: str) -> None:
    """The last command, a run with nothing new, sent two statements from its models, both
    once per run (_ingested_through, in whichever model asks first): the receipts table found
    by name (_receipts_relation), and the one read of the log's receipts."""
    sent = [
        " ".join(sql.split()[-12:])
        for statements in project.model_statements().values()
        for sql in statements
    ]
    assert (
        len(sent) == 2
        and sent[0].endswith(f"show tables in {log_schema} like 'ingestion_batches'")
        and sent[1].endswith(f"from {log_schema}.ingestion_batches")
    ), "statements sent for models with nothing new: " + "; ".join(sent)


def check_nothing_new(project: Project) -> None:
    """A run with nothing new sends no statement per model (no column check: each model's
    SQL is the one its last write recorded in the ledger), and says so in each model's
    result; a ledger of an earlier version of the package, without the column of those
    fingerprints, gets it in the next run, which then equals the full refresh."""
    schema = f"{project.prefix}_nothing_new"
    full = f"{schema}_full"
    log_schema = f"{schema}_log"
    reset(schema, full, log_schema)
    project.deliver([1, 2, 3, 6, 7], log_schema)
    project.run(schema, log_schema)
    project.deliver([4], log_schema)
    project.run(schema, log_schema)
    assert set(project.model_statements()) == set(MODELS)
    results = project.run(schema, log_schema).results
    check_no_model_statements(project, log_schema)
    messages = {
        result.node.name: result.message
        for result in results
        if result.node.resource_type == "model"
    }
    assert messages == {model: "up to date through ingestion batch 2" for model in MODELS}

    # the ledger as an earlier version of the package created it: under its earlier name,
    # kappa_consumed_batches, and without sql_fingerprint
    ledger, earlier = f"{schema}.kappa_batch_ledger", f"{schema}.kappa_consumed_batches"
    spark().sql(
        f"create table {earlier} using parquet partitioned by (model_name, first_batch_id)"
        " as select last_batch_id, refresh_mode, recorded_at, recomputed_partitions,"
        f" model_name, first_batch_id from {ledger}"
    )
    spark().sql(f"drop table {ledger}")
    recorded = rows(f"select model_name, first_batch_id, last_batch_id from {earlier}")
    project.deliver([5], log_schema)
    project.run(schema, log_schema)
    assert (
        f"Renamed the batch ledger of {schema} from kappa_consumed_batches to kappa_batch_ledger"
        in project.logged
    )
    assert f"Added sql_fingerprint string to the batch ledger of {schema}" in project.logged
    tables = {row.tableName for row in spark().sql(f"show tables in {schema}").collect()}
    assert "kappa_batch_ledger" in tables and "kappa_consumed_batches" not in tables
    assert set(project.model_statements()) == set(MODELS)  # each recorded batch 3
    # the earlier rows kept, with a null fingerprint; each model's new row has one
    unfingerprinted = f"select model_name, first_batch_id, last_batch_id from {ledger}"
    assert rows(unfingerprinted + " where sql_fingerprint is null") == recorded
    assert rows(
        f"select model_name, first_batch_id from {ledger} where sql_fingerprint is not null"
    ) == sorted((model, 3) for model in MODELS)
    project.run(schema, log_schema)
    check_no_model_statements(project, log_schema)
    project.run(full, log_schema, "--full-refresh")
    assert differences(schema, full) == {}, (
        "after the ledger was upgraded, the tables differ from the full refresh"
    )


def check_run_lock(project: Project) -> None:
    """A second run while the schema's lock is held changes nothing and names the holder;
    released, the run goes ahead."""
    schema = f"{project.prefix}_lock"
    log_schema = f"{schema}_log"
    reset(schema, log_schema)
    project.deliver([1], log_schema)
    project.dbt(
        ["run-operation", "hold_run_lock", "--args", "{holder: other-run}"],
        schema=schema,
        log_schema=log_schema,
    )
    expect_failure(
        lambda: project.run(schema, log_schema), "is being built by another run", "run other-run"
    )
    require(
        not spark().catalog.tableExists(f"{schema}.stg_events"),
        Reason.WRONG_ROWS,
        "the run refused by the lock built stg_events",
    )
    project.dbt(
        ["run-operation", "kappa.release_run_lock", "--args", "{holder: other-run}"],
        schema=schema,
        log_schema=log_schema,
    )
    project.run(schema, log_schema)
    built = rows(f"select count(*) from {schema}.stg_events")
    require(built == [(5,)], Reason.WRONG_ROWS, f"after the lock's release: {built} rows")


def check_models_elsewhere(project: Project) -> None:
    """A project whose generate_schema_name builds the models outside the target schema (as a
    serving layer's versions do): the ledger and run lock live beside the models, none in the
    target schema; a lock held there stops the run, naming that schema; the incremental runs,
    the ledger compacted, equal the full refresh."""
    home, elsewhere = f"{project.prefix}_home", f"{project.prefix}_elsewhere"
    full, log_schema = f"{elsewhere}_full", f"{home}_log"
    reset(home, elsewhere, full, log_schema)
    placed = ("--vars", f"{{kappa_it_models_schema: {elsewhere}, kappa_ledger_compact_after: 2}}")
    for step in SCHEDULES["shuffled"]:
        project.deliver(step, log_schema)
        project.run(home, log_schema, *placed)
        check_ledger(elsewhere)
    kept = (
        {table.name for table in spark().catalog.listTables(home)}
        if spark().catalog.databaseExists(home)
        else set()
    )
    require(
        not kept & {"kappa_batch_ledger", "kappa_run_lock", *MODELS},
        Reason.WRONG_ROWS,
        f"the target schema {home} holds {sorted(kept)}; everything belongs in {elsewhere}",
    )
    project.dbt(
        [
            "run-operation",
            "hold_run_lock",
            "--args",
            f"{{holder: other-run, schema_name: {elsewhere}}}",
        ],
        schema=home,
        log_schema=log_schema,
    )
    expect_failure(
        lambda: project.run(home, log_schema, *placed),
        "is being built by another run",
        f"(schema {elsewhere})",
    )
    project.dbt(
        ["run-operation", "kappa.release_run_lock", "--args", "{holder: other-run}", *placed],
        schema=home,
        log_schema=log_schema,
    )
    project.run(home, log_schema, *placed)
    project.run(full, log_schema, "--full-refresh")
    found = differences(elsewhere, full)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"models outside the target schema: the tables differ from the full refresh {found}",
    )


def check_failed_write(project: Project) -> None:
    """A model whose run fails just before its write is redone by the next run, which then
    equals the full refresh (what the failed run recorded must not outlive it). A key model's
    run that fails after it dropped the buckets it recomputes (on parquet, with the other keys'
    rows they held) has them recomputed by the next run."""
    schema = f"{project.prefix}_failed_write"
    full = f"{schema}_full"
    log_schema = f"{schema}_log"
    reset(schema, full, log_schema)
    project.deliver([1, 2], log_schema)
    project.run(schema, log_schema)
    project.deliver([4, 5], log_schema)
    _fail_at(project, schema, log_schema, "rolling_hour:before_write:fail")
    project.run(schema, log_schema)
    # u1, u2 and u7 (buckets 3, 0 and 0 of 4): u2's bucket holds u4's row too
    project.deliver([6], log_schema)
    _fail_at(project, schema, log_schema, "user_state:after_drop:fail")
    left = rows(f"select user_id from {schema}.user_state")
    require(
        left == [("u3",), ("u8",)],
        Reason.WRONG_ROWS,
        f"the failed run did not drop exactly the buckets of u1 and u2 (with u4's and u7's"
        f" rows): {left} left",
    )
    project.run(schema, log_schema)  # recomputes the dropped buckets from stg_events
    project.run(full, log_schema, "--full-refresh")
    found = differences(schema, full)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"after the failed run, the tables differ from the full refresh: {found}",
    )


def _day_recomputed_after(
    project: Project, name: str, plant: Callable[[Path], None]
) -> dict[str, tuple[int, int]]:
    """Batches 1 and 2 built; then `plant` leaves in `daily_totals`' directory what a kill
    would (given the directory; 1 March is `event_date=2024-03-01`); then e11 (late on 1
    March: daily_totals recomputes that day) built, and a full refresh beside. The tables'
    differences, per model ({}: none)."""
    schema = f"{project.prefix}_{name}"
    full = f"{schema}_full"
    log_schema = f"{schema}_log"
    reset(schema, full, log_schema)
    project.deliver([1, 2], log_schema)
    project.run(schema, log_schema)
    location = next(
        row["data_type"]
        for row in spark().sql(f"describe table extended {schema}.daily_totals").collect()
        if row["col_name"] == "Location"
    )
    plant(Path(location.removeprefix("file:")))
    project.deliver([4], log_schema)
    project.run(schema, log_schema)
    project.run(full, log_schema, "--full-refresh")
    return differences(schema, full)


FIRST_DAY = "event_date=2024-03-01"


def check_unlisted_partition_files(project: Project, tmp: Path) -> None:
    """A day's files left in its partition's directory without the partition in the metastore
    (what a run killed after its insert moved them in, before it registered the partition,
    leaves; found by `kappa-shop chaos`) are replaced, not added to, when a later run
    recomputes that day."""

    def unlist(table: Path) -> None:
        kept = tmp / "kept"
        shutil.copytree(table / FIRST_DAY, kept)
        schema = f"{project.prefix}_unlisted"
        spark().sql(f"alter table {schema}.daily_totals drop partition (event_date = '2024-03-01')")
        shutil.copytree(kept, table / FIRST_DAY)  # the files back, the partition no longer listed
        counted = rows(
            f"select count(*) from {schema}.daily_totals where event_date = '2024-03-01'"
        )
        assert counted == [(0,)]

    found = _day_recomputed_after(project, "unlisted", unlist)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"the unlisted files of a recomputed day were counted with its new rows: {found}",
    )


def check_unfinished_write(project: Project) -> None:
    """The tasks' output of a write killed after its tasks committed and before its job did
    (left in the table's `_temporary` directory, as a SIGKILL there leaves it; found by
    `kappa-shop chaos` killing inside writes) is never merged into the table by a later
    write: Spark's next append into the same table would (SPARK-29037), its rows counted
    twice. Here a recomputed day's task output, planted as the kill leaves it."""

    def plant(table: Path) -> None:
        task = table / "_temporary" / "0" / "task_202612060000000_0007_m_000000" / FIRST_DAY
        task.mkdir(parents=True)
        for written in (table / FIRST_DAY).glob("part-*"):
            shutil.copy(written, task / written.name.replace("part-", "part-killed-"))
        assert any(task.iterdir())

    found = _day_recomputed_after(project, "unfinished", plant)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"a killed write's task output was merged into the table by a later write: {found}",
    )


def _fail_at(project: Project, schema: str, log_schema: str, fault_point: str) -> None:
    """A dbt run that fails at `fault_point` (`<model>:<point>:fail`, kappa._fault_point)."""
    os.environ["KAPPA_FAULT_POINT"] = fault_point
    try:
        expect_failure(lambda: project.run(schema, log_schema), "kappa fault point")
    finally:
        os.environ.pop("KAPPA_FAULT_POINT")


def check_recomputed_report(project: Project) -> None:
    """A run ends with a line per model that recomputed days or key buckets, saying which and
    how many rows it wrote there."""
    schema = f"{project.prefix}_report"
    log_schema = f"{schema}_log"
    reset(schema, log_schema)
    project.deliver([1, 2, 3, 6, 7], log_schema)
    project.run(schema, log_schema)  # a first build: rebuilt, nothing reported
    require(project.report() == [], Reason.WRONG_REPORT, f"a first build: {project.report()}")
    # e11 (u3, 23:40 on 1 March): its own day; for the rolling hour also the next day, whose
    # first hour it lies in; u3's key bucket (2 of 4). Rows written: daily_totals one per day;
    # rolling_hour one per event of the two days (1 March: e01-e05 and e11, 2 March: e06-e09);
    # user_state and user_tiers one per user of bucket 2 with state (u8 closed; users u1-u5
    # and u7), counted from the log's user ids by Spark's hash, not from the models' tables
    in_bucket = (
        "select count(*) from values ('u1'), ('u2'), ('u3'), ('u4'), ('u5'), ('u7') as users(u)"
    )
    users_in_bucket = spark().sql(in_bucket + " where pmod(xxhash64(u), 4) = 2").first()[0]
    assert users_in_bucket >= 1  # u3 at least: the bucket the run recomputes
    project.deliver([4], log_schema)
    project.run(schema, log_schema)
    report = project.report()
    for model, recomputed, rows in (
        ("daily_totals", "1 day(s), 2024-03-01", 1),
        ("rolling_hour", "2 day(s), 2024-03-01..2024-03-02", 10),
        ("user_state", "1 of 4 key bucket(s)", users_in_bucket),
        ("user_tiers", "1 of 4 key bucket(s)", users_in_bucket),
    ):
        expected = (
            f"kappa: {schema}.{model}: ingestion batches 2..2 recomputed {recomputed}:"
            f" {rows:,} row(s) written"
        )
        require(expected in report, Reason.WRONG_REPORT, f"{expected!r} not in {report}")
    project.run(schema, log_schema)  # nothing new: nothing recomputed, nothing reported
    require(project.report() == [], Reason.WRONG_REPORT, f"nothing new: {project.report()}")


def check_rebuilt_upstream(project: Project) -> None:
    """Recomputing models rebuilt in full on their own (with the batches they read) are
    traced by nothing: their children, which read the days or buckets they recomputed, are
    rebuilt in full by the next run, which then equals the full refresh."""
    schema = f"{project.prefix}_rebuilt"
    full = f"{schema}_full"
    log_schema = f"{schema}_log"
    reset(schema, full, log_schema)
    project.deliver([1, 2, 3, 6, 7], log_schema)
    project.run(schema, log_schema)
    project.deliver([4, 5], log_schema)
    # daily_totals and user_state rebuilt through the new batch 2, their children left behind
    project.run(
        schema, log_schema, "--full-refresh", "--select", "stg_events daily_totals user_state"
    )
    project.run(schema, log_schema)
    project.run(full, log_schema, "--full-refresh")
    found = differences(schema, full)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"after upstream models were rebuilt alone, the tables differ from the full refresh:"
        f" {found}",
    )


LEFTOVER_MODELS = ("stg_events", "daily_totals", "daily_averages")


def check_build_leftovers(project: Project) -> None:
    """What a killed full refresh leaves is cleared by the next run, which then equals the
    full refresh: a build table beside its model's table (killed while writing it), and a
    build table whose model has no table but files at its location (killed inside the swap:
    Hive's RENAME moves the directory before it commits, its DROP deletes files after)."""
    schema = f"{project.prefix}_leftovers"
    full = f"{schema}_full"
    log_schema = f"{schema}_log"
    reset(schema, full, log_schema)
    select = ("--select", " ".join(LEFTOVER_MODELS))
    project.deliver([1, 2, 3], log_schema)
    project.run(schema, log_schema, *select)
    # killed while writing daily_totals' rebuild: its build table, complete or not
    spark().sql(
        f"create table {schema}.daily_totals__kappa_build_0123456789ab using parquet"
        f" partitioned by (event_date) as select * from {schema}.daily_totals"
    )
    # killed inside daily_averages' swap: the build table is in the metastore, the model's
    # table is not, and its files are at the model's location
    location = next(
        row["info_value"]
        for row in spark().sql(f"describe schema extended {schema}").collect()
        if row["info_name"] == "Location"
    )
    model_files = Path(location.removeprefix("file:")) / "daily_averages"
    kept = Path(location.removeprefix("file:")).parent / f"{schema}_kept_daily_averages"
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(model_files, kept)
    spark().sql(
        f"alter table {schema}.daily_averages rename to {schema}.daily_averages__kappa_build_ba98"
    )
    shutil.copytree(kept, model_files)  # files without a table
    shutil.rmtree(kept)
    project.deliver([4, 5], log_schema)
    try:
        project.run(schema, log_schema, *select)
    except DbtFailure as failure:
        if "LOCATION_ALREADY_EXISTS" not in str(failure):
            raise
        raise CheckFailed(
            Reason.NOT_RECOVERED, f"the run after the kill's leftovers failed on them: {failure}"
        ) from failure
    leftovers = rows(f"show tables in {schema} like '*__kappa_build_*'")
    require(
        leftovers == [],
        Reason.LEFTOVER_KEPT,
        f"tables left by killed full refreshes are still there: {leftovers}",
    )
    project.run(full, log_schema, "--full-refresh", *select)
    found = differences(schema, full, LEFTOVER_MODELS)
    require(
        found == {},
        Reason.DIFFERENCE,
        f"after the kill's leftovers were cleared, the tables differ from the full refresh:"
        f" {found}",
    )


# The checks of a copy, cheapest first (the mutation check stops at the first that fails).
CHECKS: dict[str, Callable[[Project], None]] = {
    "receipts": check_receipts,
    "ledger_gap": check_ledger_gap,
    "column_change": check_column_change,
    "run_lock": check_run_lock,
    "models_elsewhere": check_models_elsewhere,
    "build_leftovers": check_build_leftovers,
    "failed_write": check_failed_write,
    "recomputed_report": check_recomputed_report,
    "unfinished_write": check_unfinished_write,
    "rebuilt_upstream": check_rebuilt_upstream,
    **{
        f"schedule_{name}": (lambda project, name=name: check_schedule(project, name))
        for name in ("reach_edges", "shuffled")
    },
    "delta_schedule": lambda project: check_schedule(project, "late_together", "local_delta"),
}


# The fixture every test module imports (a module of its own, not a conftest.py: the shop's
# suite imports its own conftest by that name, and pytest collects both in one run).
@pytest.fixture(scope="session")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """The package and its integration project copied to a directory of their own (where
    this process's Spark keeps its metastore if it starts here), installed and seeded."""
    root = tmp_path_factory.mktemp("kappa_package")
    previous_directory = Path.cwd()
    previous_environment = dict(os.environ)
    os.chdir(root)  # Spark resolves its warehouse and metastore against the cwd
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        project = Project.copy_of(PACKAGE_ROOT, root / "kappa", prefix="kit")
        project.seed()
        REFERENCE_PROJECT[:] = [project]
        yield project
    finally:
        REFERENCE_PROJECT.clear()
        _REFERENCES.clear()
        os.chdir(previous_directory)
        os.environ.clear()
        os.environ.update(previous_environment)
