"""`kappa-shop chaos`: kill the pipeline with SIGKILL at random moments of random steps, recover
with the normal commands, and check after every run that nothing was lost or doubled.

A campaign works in a schema of its own (`chaos` by default, with `chaos_raw` and its versions)
and a work directory holding its generated log and landing zone; it starts from nothing. Then,
for each run, drawn from one random generator seeded with --seed:

1. the next arrival batch of the log lands; unless the run kills ingestion, it is ingested;
2. the run's step starts as a command of its own, in a process group of its own, and the whole
   group (Spark's JVM included) is killed with SIGKILL at a random moment of it:
   - `ingest`: `kappa-shop ingest` (a few files per ingestion batch, so that a kill can fall
     between two batches or inside one);
   - `build`: `kappa-shop build --log ingested` (an incremental run with its tests);
   - `full-refresh`: `kappa-shop build --log ingested --full-refresh`;
   - `reprocess`: `kappa-shop reprocess` (rebuild beside the served version, then switch);
   - `compaction`: `kappa-shop build --log ingested`, killed inside its on-run-end hook, which
     compacts the batch ledger (every build of a campaign compacts: the ledger's limit is set to
     2 runs per model, KAPPA_LEDGER_COMPACT_AFTER);
   - `live`: `kappa-shop live` for one cycle (the service: ingestion, the build of what is new,
     the cycle's record), killed at a random moment of its cycle;
3. the recovery runs the normal commands again: `kappa-shop ingest` and
   `kappa-shop build --log ingested` with every data test (one process, the CLI's own
   code; after a killed service, first the service again for a cycle, as its next start runs,
   and its records checked: no cycle recorded twice, no batch accounted for twice or never),
   then checks that every landed record is in its raw table exactly once;
4. every --check-every runs and after the last, a reprocess without its switch (`kappa-shop
   reprocess --no-switch`, its tests left out) rebuilds every model from the raw tables beside
   the served version and compares them: every model of the served version, maintained
   incrementally through the kills, must equal it row for row.

The moment of a kill is drawn uniform over the step's duration, as the last run of the same
command that was not killed took (its recovery); from that moment the kill waits for a write in
flight in the warehouse (a staging directory of Spark's in a table's directory,
kills.WriteWatch) and lands inside it, so that every kill interrupts a write: a raw table's
batch, a model's insert, the batch ledger's commit or compaction. A command that finishes first
is not killed, and says so. (On Delta targets, whose writes leave nothing to see, the kill
lands at the moment drawn.) Where it landed is read from what the command printed, from dbt's
debug log (logs/dbt.log: the model running, the SQL statement in flight) and from the staging
directories the kill left: the tables whose write it interrupted.

Everything the campaign runs is the project's normal code; nothing is stubbed. A campaign is
slow on purpose (a JVM per command): about a minute and a half per run on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError
from kappa_shop.ops.chaos_worker import RESULT_PREFIX, ingest_arguments, live_arguments
from kappa_shop.ops.kills import (
    WORK_BEGINS,
    WriteWatch,
    interrupted_tables,
    log_offset,
    log_since,
    run_killed,
    where_it_landed,
)

STEPS = ("ingest", "build", "full-refresh", "reprocess", "compaction", "live")
# Until a command has run once unkilled: its expected seconds (the kill's moment is drawn in it).
# Compaction's: the seconds after the build's last node in which the on-run-end hook starts its
# writes (the ledger's commit, then the compacted rows). A service's cycle: ingestion and a
# build's.
FIRST_ESTIMATES = {
    "ingest": 30.0, "build": 90.0, "full-refresh": 90.0, "reprocess": 150.0, "compaction": 1.0,
    "live": 60.0,
}  # fmt: skip
# the steps whose command ingests the run's batch itself (the campaign does not, before it)
INGESTING = ("ingest", "live")
COMPACT_AFTER = "2"  # every model's batch ledger is compacted at every build of a campaign


@dataclass(frozen=True)
class ChaosConfig:
    """A campaign: how many runs, its seed, the log's size, which steps to kill, and how often
    to compare with a rebuild from the log."""

    runs: int
    seed: int
    events: int = 20_000
    days: float = 3.0
    check_every: int = 10
    steps: tuple[str, ...] = STEPS
    target: str | None = None
    # from Kafka (kappa_shop.ingest.ingestion.KafkaSource, its topic prefix the campaign's own)
    # instead of landing files; None: landing files
    kafka: Any = None

    def validate(self) -> None:
        if self.runs < 1:
            raise KappaShopError("--runs must be at least 1")
        if self.check_every < 1:
            raise KappaShopError("--check-every must be at least 1")
        unknown = [step for step in self.steps if step not in STEPS]
        if unknown or not self.steps:
            raise KappaShopError(
                f"unknown step(s) {', '.join(unknown) or '(none given)'}: choose among "
                + ", ".join(STEPS)
            )

    @property
    def batches(self) -> int:
        """One arrival batch for the first build, then one per run."""
        return self.runs + 1


@dataclass
class ChaosRun:
    """One run of a campaign: where its kill landed and what its recovery found."""

    run: int
    step: str
    kill_after: float  # seconds after the command's work began (its marker): when it landed
    killed: bool  # False: the command finished before its moment came
    landed: str  # where in the step (phase, model, hook)
    statement: str  # the SQL in flight, or between statements
    recovery: str  # what the recovery's commands did
    raw: str  # "exactly once", or what was lost or doubled
    compared: str = "-"  # the comparison with a rebuild from the log, when this run made one
    # the tables whose write the kill left unfinished (with a write watch); [] if none
    interrupted: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0  # the whole run: the killed command, its recovery and the checks


@dataclass
class ChaosReport:
    config: ChaosConfig
    schema: str
    runs: list[ChaosRun] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def problems(self) -> list[str]:
        return [f"run {run.run}: {problem}" for run in self.runs for problem in run.problems]


# --- the campaign ----------------------------------------------------------------------------


class Campaign:
    """Runs a campaign from a controller process that never starts Spark itself: the commands
    and the checks each run in a process of their own, one at a time."""

    def __init__(
        self,
        root: Path,
        config: ChaosConfig,
        work_dir: Path,
        schema: str,
        progress: Callable[[str], None] = print,
    ) -> None:
        self.root = root
        self.config = config
        self.work_dir = work_dir
        self.schema = schema
        self.progress = progress
        self.random = random.Random(config.seed)
        self.estimates = dict(FIRST_ESTIMATES)
        self.measured: set[str] = set()
        self.environment = {
            **os.environ,
            "KAPPA_SHOP_SCHEMA": schema,
            "KAPPA_LEDGER_COMPACT_AFTER": COMPACT_AFTER,
        }
        if config.target:
            self.environment["KAPPA_SHOP_TARGET"] = config.target
        self.dbt_log = root / "logs" / "dbt.log"
        self.write_watch: WriteWatch | None = None  # set by the setup (the warehouse's place)

    @property
    def log_dir(self) -> Path:
        return self.work_dir / "log"

    @property
    def landing(self) -> Path:
        return self.work_dir / "landing"

    def _kappa_shop(self, *arguments: str) -> list[str]:
        return [sys.executable, "-m", "kappa_shop", *arguments]

    def _command(self, step: str) -> list[str]:
        if step == "ingest":
            return self._kappa_shop(*ingest_arguments(self.landing, self.config.kafka))
        if step == "reprocess":
            return self._kappa_shop("reprocess")
        if step == "live":
            return self._kappa_shop(*live_arguments(self.landing, self.config.kafka))
        build = ["build", "--log", "ingested", "--no-docs"]
        if step == "full-refresh":
            build.append("--full-refresh")
        if step == "compaction":  # (the hook comes sooner: it runs after the tests)
            build.append("--no-tests")
        return self._kappa_shop(*build)

    def _worker(self, *arguments: str) -> dict[str, Any]:
        """One worker process (this module's `worker`): its result, or the reason it failed."""
        source = self.config.kafka
        kafka = [] if source is None else ["--kafka", json.dumps(asdict(source))]
        outcome = run_killed(
            [sys.executable, "-m", "kappa_shop.ops.chaos_worker", *arguments, *kafka], self.root,
            self.environment, kill_after=None,
        )  # fmt: skip
        for line in reversed(outcome.output.splitlines()):
            if line.startswith(RESULT_PREFIX):
                return dict(json.loads(line[len(RESULT_PREFIX) :]))
        tail = "\n".join(outcome.output.splitlines()[-25:])
        raise KappaShopError(
            f"chaos: the worker ({' '.join(arguments[:1])}) stopped without a result "
            f"(exit {outcome.returncode}); its last lines:\n{tail}"
        )

    def run(self) -> ChaosReport:
        from kappa_shop.log.generator import GeneratorConfig, generate

        self.config.validate()
        # stopped (Ctrl-C, or SIGTERM as well): the running command's group is killed with it
        signal.signal(signal.SIGTERM, _interrupt)
        started = time.monotonic()
        report = ChaosReport(self.config, self.schema)
        steps = [self.random.choice(self.config.steps) for _ in range(self.config.runs)]
        kafka = self.config.kafka
        self.progress(
            f"Chaos: {self.config.runs} run(s), seed {self.config.seed}, schema {self.schema}, "
            f"a log of about {self.config.events:,} events in {self.config.batches} arrival "
            f"batches ({self.work_dir}), "
            + (
                "landed as files"
                if kafka is None
                else f"produced to Kafka at {kafka.bootstrap_servers} ({kafka.topic_prefix}*)"
            )
        )
        generate(
            GeneratorConfig(
                seed=self.config.seed, events=self.config.events, days=self.config.days,
                batches=self.config.batches,
            ),
            self.log_dir,
            progress=lambda message: None,
        )  # fmt: skip
        setup = self._worker(
            "setup", "--work-dir", str(self.work_dir), "--ingest", str(steps[0] not in INGESTING)
        )
        self.progress(f"  started from nothing: {setup['detail']}")
        if setup["problems"]:
            raise KappaShopError(f"chaos: {setup['problems'][0]}")
        self.estimates.update(setup["seconds"])
        if setup.get("warehouse"):
            self.write_watch = WriteWatch(Path(setup["warehouse"]))
        else:
            self.progress("  the models are Delta tables: each kill lands at its moment drawn")
        for number, step in enumerate(steps, start=1):
            run_started = time.monotonic()
            run = self._one_run(number, step)
            last = number == len(steps)
            compare = last or number % self.config.check_every == 0
            following = None if last else steps[number]
            result = self._worker(
                "recover", "--work-dir", str(self.work_dir), "--step", step,
                "--compare", str(compare), "--next-batch", str(number + 2) if not last else "0",
                "--ingest", str(following is not None and following not in INGESTING),
            )  # fmt: skip
            run.recovery = result["recovery"]
            run.raw = result["raw"]
            run.compared = result["compared"]
            run.problems += result["problems"]
            for name, seconds in result.get("seconds", {}).items():
                self.estimates[name] = seconds  # (the kills' moments are drawn in these)
            if "full-refresh" not in self.measured:  # (until one ran whole: a build's time)
                self.estimates["full-refresh"] = self.estimates["build"]
            run.seconds = time.monotonic() - run_started
            report.runs.append(run)
            self.progress(format_run(run))
        report.seconds = time.monotonic() - started
        return report

    def _one_run(self, number: int, step: str) -> ChaosRun:
        estimate = self.estimates[step]
        kill_after = round(self.random.uniform(0.0, estimate), 2)
        marker = WORK_BEGINS[step]
        offset = log_offset(self.dbt_log)
        outcome = run_killed(
            self._command(step), self.root, self.environment, kill_after, marker=marker,
            write_watch=self.write_watch,
        )  # fmt: skip
        runs_dir = self.work_dir / "runs"
        runs_dir.mkdir(exist_ok=True)
        (runs_dir / f"run-{number:03d}-{step}.log").write_text(outcome.output)
        if outcome.killed:
            landed, statement = where_it_landed(
                step, outcome.output, log_since(self.dbt_log, offset)
            )
        else:
            landed, statement = (
                f"finished before the kill (exit {outcome.returncode}, {outcome.seconds:.0f} s)",
                "-",
            )
            if step != "compaction" and outcome.marked_after is not None:
                self.estimates[step] = outcome.seconds - outcome.marked_after
                self.measured.add(step)
        run = ChaosRun(
            number, step, kill_after, outcome.killed, landed, statement, recovery="", raw="",
            interrupted=interrupted_tables(set(outcome.interrupted)),
        )  # fmt: skip
        if outcome.killed:  # (its moment drawn, plus its wait for a write)
            run.kill_after = round(kill_after + outcome.waited, 2)
        if not outcome.killed and outcome.returncode != 0:
            run.problems.append(
                f"{step} ended with exit {outcome.returncode} before its kill: "
                + " | ".join(outcome.output.strip().splitlines()[-3:])
            )
        return run


def _interrupt(signal_number: int, frame: Any) -> None:
    raise KeyboardInterrupt


# --- the table -------------------------------------------------------------------------------


def format_run(run: ChaosRun) -> str:
    if run.killed:
        where = (
            run.landed
            if run.landed.startswith(("before", "after", "between"))
            else f"in {run.landed}"
        )
        kill = f"killed at {run.kill_after:.1f} s {where}; in flight: {run.statement}"
        if run.interrupted:
            kill += f"; inside a write of {', '.join(run.interrupted)}"
    else:
        kill = f"not killed: {run.landed}, its kill due at {run.kill_after:.1f} s"
    line = f"  run {run.run:>3}: {run.step:<12} {kill}. Recovery: {run.recovery}; raw: {run.raw}"
    if run.compared != "-":
        line += f"; against a rebuild from the log: {run.compared}"
    line += f" ({run.seconds:.0f} s)"
    return line + "".join(f"\n      PROBLEM: {problem}" for problem in run.problems)


def format_report(report: ChaosReport) -> str:
    """The campaign's table: where each kill landed, what each recovery found; then totals."""
    lines = [
        "",
        f"Chaos campaign: {len(report.runs)} run(s), seed {report.config.seed}, "
        f"{report.seconds / 60:.1f} min",
        f"{'run':>4}  {'step':<12} {'kill at':>8}  {'where it landed':<50} {'in flight':<34} "
        f"{'write interrupted':<32} "
        f"{'raw tables':<14} {'tests':<6} {'vs rebuild':<16}",
    ]
    for run in report.runs:
        when = f"{run.kill_after:.1f} s" if run.killed else "no kill"
        tests = "pass" if "tests passed" in run.recovery else "FAIL"
        lines.append(
            f"{run.run:>4}  {run.step:<12} {when:>8}  {run.landed[:50]:<50} "
            f"{run.statement[:34]:<34} {', '.join(run.interrupted)[:32] or '-':<32} "
            f"{run.raw[:14]:<14} {tests:<6} {run.compared:<16}"
        )
    by_step = Counter(run.step for run in report.runs if run.killed)
    lines.append(
        "Kills by step: "
        + ", ".join(f"{step} {by_step.get(step, 0)}" for step in STEPS)
        + f"; not killed (finished first): {sum(1 for run in report.runs if not run.killed)}"
    )
    inside = sum(1 for run in report.runs if run.interrupted)
    killed = sum(by_step.values())
    lines.append(f"Kills inside a write (a staging directory left): {inside} of {killed}")
    problems = report.problems
    lines.append(
        "Nothing lost, doubled or different."
        if not problems
        else f"{len(problems)} problem(s):\n" + "\n".join(f"  {line}" for line in problems)
    )
    return "\n".join(lines)


def write_results(report: ChaosReport, work_dir: Path) -> Path:
    path = work_dir / "chaos.json"
    path.write_text(
        json.dumps(
            {
                "config": asdict(report.config),
                "schema": report.schema,
                "seconds": report.seconds,
                "runs": [asdict(run) for run in report.runs],
            },
            indent=1,
        )
    )
    return path
