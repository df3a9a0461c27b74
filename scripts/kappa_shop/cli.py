"""The `kappa-shop` command: one entry point, one subcommand per job.

    kappa-shop check      is this machine ready (Java 17 for Spark)?
    kappa-shop generate   write a generated event log (arrival batches + manifest)
    kappa-shop deliver    land arrival batches of a generated log in a landing zone
    kappa-shop ingest     ingest landed files into the raw tables, exactly once
    kappa-shop verify     the proof: incremental runs equal a full refresh (per model diff)
    kappa-shop build      log -> raw tables (the sample, or as ingested), dbt build, docs, summary
    kappa-shop reprocess  rebuild every model from the log beside the served version, then switch
    kappa-shop rollback   serve the version served before again
    kappa-shop versions   list the schema's versions; --drop-old drops those beyond --keep
    kappa-shop chaos      kill the pipeline at random moments, recover, check nothing was lost
    kappa-shop cluster    start, stop or show a Spark cluster with a Thrift Server on 127.0.0.1
    kappa-shop kafka      start, stop or show a single-node Apache Kafka broker on 127.0.0.1
    kappa-shop produce    produce arrival batches of a generated log to Kafka topics
    kappa-shop docs-coverage  fail on any undocumented source, seed, model, column or macro
    kappa-shop lineage    draw the DAG from the manifest (docs/lineage.svg); --check: is it current?
    kappa-shop slim-ci    build and test only what changed since a saved manifest of main

Ordinary mistakes (no Java, a bad option value, a missing directory, a failed dbt command)
end with one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from kappa_shop import __version__
from kappa_shop.errors import KappaShopError
from kappa_shop.log.generator import GeneratorConfig
from kappa_shop.ops.chaos import STEPS as CHAOS_STEPS

GENERATOR_HELP: dict[str, str] = {
    "seed": "random seed: the same seed and options give the same bytes",
    "events": "about how many valid events to generate (1,000 to 100,000,000; within a few %%)",
    "days": "length of the simulated period in days",
    "start": "first day of the simulated period (UTC), YYYY-MM-DD",
    "partitions": "partitions per topic",
    "batches": "number of arrival batches the period is cut into",
    "late_fraction": "fraction of events delivered late (minutes, hours, or a tail of days)",
    "duplicate_fraction": "fraction of events redelivered (same event_id, new offset)",
    "conflict_fraction": "fraction of events redelivered with a conflicting payload",
    "malformed_fraction": "fraction of records malformed (spread over every malformed kind)",
    "drift_fraction": "fraction of events carrying an unknown extra field (valid schema drift)",
    "skewed_producer_fraction": "fraction of users whose device clock is skewed",
    "max_clock_skew_seconds": "largest clock skew of a skewed device, either way",
    "max_partition_lag_minutes": "largest steady lag of a topic-partition reaching storage",
    "held_back_fraction": "fraction of the events of the last --held-back-days days held back "
    "until the period has ended, to arrive in the stragglers batch (benchmarks; 0 = off)",
    "held_back_days": "how far back held-back events reach, in days",
    "first_offset": "offset of each partition's first record, for a log that continues "
    "another one (benchmarks)",
}


def _parse_batches(text: str) -> list[int]:
    """'3', '1-4', '1,3,5-7' -> batch numbers."""
    numbers: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                first, last = (int(value) for value in part.split("-", 1))
                numbers += range(first, last + 1)
            else:
                numbers.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a batch list: {text!r} (try 3, 1-4 or 1,3)"
        ) from None
    if not numbers or min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"batch numbers start at 1: {text!r}")
    return numbers


def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        default=None,
        help="dbt target from profiles.yml: local (embedded Spark, the default), local_delta (the "
        "same with Delta Lake tables) or cluster",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kappa-shop",
        description=(
            "Tools for the kappa_shop dbt project: an append-only shop event log on Spark and "
            "the models derived from it."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the dbt project root (default: the nearest directory upward with dbt_project.yml)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="check that this machine can run the project (Java 17 for Spark)",
        description=(
            "Check the prerequisites that pip cannot install: a Java 17 runtime. With "
            "--target cluster, also that the target's Thrift Server and master answer."
        ),
    )
    check.add_argument(
        "--target",
        default=None,
        help="also check this dbt target's connection (a thrift target: server and master)",
    )

    generate = commands.add_parser(
        "generate",
        help="write a generated event log: arrival batches of landed files and a manifest",
        description=(
            "Simulate the shop and write its event log as a broker-to-storage sink would land "
            "it: OUT/batch=NNNNNN/topics/<topic>/partition=<p>/*.jsonl for each arrival batch, "
            "and OUT/manifest.json with the ground truth (counts per stream, per imperfection "
            "and per batch). Deterministic for a seed; memory stays flat at any scale."
        ),
    )
    generate.add_argument(
        "--out", type=Path, required=True, help="directory to write (new or empty)"
    )
    defaults = GeneratorConfig()
    for config_field in fields(GeneratorConfig):
        option = "--" + config_field.name.replace("_", "-")
        default = getattr(defaults, config_field.name)
        generate.add_argument(
            option,
            type=type(default),
            default=default,
            help=f"{GENERATOR_HELP[config_field.name]} (default: {default})",
        )

    deliver = commands.add_parser(
        "deliver",
        help="land arrival batches of a generated log in a landing zone",
        description=(
            "Copy the files of the chosen arrival batches of a generated log into a landing "
            "zone, each file appearing whole. Safe to repeat."
        ),
    )
    deliver.add_argument("--log", type=Path, required=True, help="a directory made by `generate`")
    deliver.add_argument("--landing", type=Path, required=True, help="the landing zone to fill")
    which = deliver.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--batches", type=_parse_batches, help="batch numbers, such as 3, 1-4 or 1,3,5-7"
    )
    which.add_argument("--all", action="store_true", help="every arrival batch of the log")

    produce = commands.add_parser(
        "produce",
        help="produce arrival batches of a generated log to Kafka topics (deliver's twin)",
        description=(
            "Send the records of the chosen arrival batches of a generated log to Kafka, one "
            "topic per stream, each record in its partition and offset order, keyed by its key, "
            "its value the event as a producer writes it (the broker adds topic, partition and "
            "offset); every imperfection of the log kept. Through Spark's Kafka sink. Safe to "
            "repeat: what a partition already holds is not sent again."
        ),
    )
    produce.add_argument("--log", type=Path, required=True, help="a directory made by `generate`")
    produce.add_argument(
        "--bootstrap-servers",
        default=None,
        help="the Kafka brokers (default: KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the broker of "
        "`kappa-shop kafka up`, 127.0.0.1:KAPPA_SHOP_KAFKA_PORT)",
    )
    which = produce.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--batches", type=_parse_batches, help="batch numbers, such as 3, 1-4 or 1,3,5-7"
    )
    which.add_argument("--all", action="store_true", help="every arrival batch of the log")
    produce.add_argument(
        "--topic-prefix",
        default="",
        help="the topics are <prefix><stream>, such as shop.order_events (default: no prefix)",
    )

    ingest = commands.add_parser(
        "ingest",
        help="ingest landed files into the raw tables, exactly once",
        description=(
            "Append every landed file not yet ingested to the raw tables (<schema>_raw.raw_"
            "<topic>), one ingestion batch per streaming micro-batch, with a checkpoint: a run "
            "killed at any point and run again neither skips nor doubles a record."
        ),
    )
    where = ingest.add_mutually_exclusive_group(required=True)
    where.add_argument("--landing", type=Path, help="the landing zone to read")
    where.add_argument(
        "--kafka",
        action="store_true",
        help="read the log's topics from Kafka (one topic per stream; see --bootstrap-servers)",
    )
    _add_kafka_settings(ingest)
    _add_target(ingest)
    ingest.add_argument(
        "--max-files-per-batch",
        type=int,
        default=None,
        help="cap the files of one ingestion batch (with --kafka: its records; default: "
        "everything available at once)",
    )
    ingest.add_argument(
        "--pause-between-writes",
        type=float,
        default=0.0,
        help="seconds to sleep before a batch reads its files and after each raw table write "
        "(fault-injection tests use this to kill ingestion, or change its files, in the middle "
        "of a batch)",
    )

    verify = commands.add_parser(
        "verify",
        help="the proof: incremental builds over a random arrival schedule equal a full refresh",
        description=(
            "Generate a log with every imperfection, deliver it in random rounds (out of order, "
            "late-only, duplicates-only, late events at the edges of every declared reach, a few "
            "late events of an old day), ingest and build incrementally after each round (one "
            "round first rebuilds an upstream model of each mode alone with --full-refresh; the "
            "ledger compacts), build twice once and replay the last run (idempotence), then "
            "build a full refresh of the same raw tables into another schema and diff every "
            "model. Prints a table per model and exits 1 on any difference, on a model not "
            "diffed, and on a model that wrote nothing after its first build."
        ),
    )
    verify.add_argument(
        "--seeds",
        default="1",
        help="comma-separated seeds; each is a separate log and schedule (default: 1)",
    )
    verify.add_argument("--events", type=int, default=3_000, help="events per log (default 3000)")
    verify.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="delivery rounds, the redelivery included: at least 3 (default 5)",
    )
    verify.add_argument(
        "--days",
        type=float,
        default=7.0,
        help="the simulated period in days; a longer one puts late events days behind the newest, "
        "with days of history on both sides (default 7)",
    )
    verify.add_argument(
        "--vars",
        default="{}",
        help="dbt vars (a YAML or JSON mapping) for every build of the proof, such as "
        "'{kappa_ledger_compact_after: 2}' (default: the project's)",
    )
    verify.add_argument(
        "--data-tests",
        choices=("every-build", "full-refresh", "none"),
        default="every-build",
        help="when the builds run the project's data tests: in every build (default), only "
        "in the full refresh (when the diff finds the incremental tables equal, the tests' "
        "verdict holds for them too; about half the time on a small log), or in none (the "
        "diff alone)",
    )
    verify.add_argument(
        "--selector",
        default=None,
        help="a YAML selector of selectors.yml: build, test and diff its models only, such as "
        "one_model_per_mode (a model of each mode with its parents: a quick proof of a target; "
        "default: every model)",
    )
    verify.add_argument(
        "--kafka",
        action="store_true",
        help="produce each round to Kafka (topics of the proof's own, deleted at its end) and "
        "ingest from there, instead of landing files",
    )
    _add_kafka_settings(verify)
    _add_target(verify)
    verify.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the generated log and its landing zone go (default: data/verify/<seed>)",
    )

    build = commands.add_parser(
        "build",
        help="log -> raw tables, dbt build, dbt docs generate, summary",
        description=(
            "Put the sample event log in the raw tables (generated: generate, deliver and "
            "ingest it batch by batch; seeds: load seeds/sample_log; ingested: load nothing, "
            "build from the log `kappa-shop ingest` put there), run `dbt build` on every "
            "derived model and test into the schema's served version "
            "(docs/reprocessing.md), run `dbt docs generate`, then print the tables with their "
            "row counts. All in one process, so Spark starts once."
        ),
    )
    _add_target(build)
    build.add_argument(
        "--log",
        choices=("generated", "seeds", "ingested"),
        default="generated",
        help="where the log comes from: the generated sample (default), the seeds' sample, or "
        "ingested: the raw tables as `kappa-shop ingest` left them (your log; nothing loaded)",
    )
    build.add_argument(
        "--no-docs", action="store_true", help="skip `dbt docs generate` (faster when iterating)"
    )
    build.add_argument(
        "--no-tests",
        action="store_true",
        help="skip the data and unit tests (about three quarters of a build of the sample log)",
    )
    build.add_argument(
        "--full-refresh",
        action="store_true",
        help="rebuild every model from the whole log, in place in the served version (readers "
        "see each table as it is rebuilt; `kappa-shop reprocess` rebuilds beside it instead)",
    )
    reprocess = commands.add_parser(
        "reprocess",
        help="rebuild every model from the log beside the served version, check it, switch",
        description=(
            "Kappa reprocessing (docs/reprocessing.md): build the whole DAG from the log (the "
            "raw tables) into a new version, <schema>__v<N+1>, while readers keep reading the "
            "served one through the views in <schema>; catch it up to the newest ingested "
            "batch; run its data and unit tests; print, per serving name, the rows the new "
            "version adds, removes and changes against the served one; then point every view "
            "at it. A failed test, or a kill at any step, leaves the served version as it was."
        ),
    )
    _add_target(reprocess)
    reprocess.add_argument(
        "--no-switch",
        action="store_true",
        help="stop after the comparison: build, catch up, test and compare, but keep serving "
        "the current version (a later reprocess starts over)",
    )
    rollback = commands.add_parser(
        "rollback",
        help="serve the version served before the current one again",
        description=(
            "Point every view of <schema> back at the version served before the current one "
            "(kept until `kappa-shop versions --drop-old`). Revert the code that built the "
            "newer version first: the next `kappa-shop build` maintains the served version "
            "with the code it runs."
        ),
    )
    _add_target(rollback)
    versions = commands.add_parser(
        "versions",
        help="list the schema's versions; --drop-old drops the old ones",
        description=(
            "List the versions of <schema> (its physical schemas <schema>__v<N>), which one is "
            "served and what happened to each; with --drop-old, drop all but --keep of them: "
            "the served one first, then the one a rollback would serve, then the newest others."
        ),
    )
    _add_target(versions)
    versions.add_argument("--drop-old", action="store_true", help="drop the versions beyond --keep")
    versions.add_argument(
        "--keep",
        type=int,
        default=2,
        help="with --drop-old: how many versions to keep, the served one included (default: 2, "
        "the served one and the one a rollback would serve)",
    )
    chaos = commands.add_parser(
        "chaos",
        help="kill the pipeline with SIGKILL at random moments, recover, check nothing was lost",
        description=(
            "A randomized fault campaign (docs/guarantees.md, Chaos) in a schema of its own: "
            "each run lands an arrival batch of a generated log, kills a random step (ingest, "
            "build, full refresh, reprocess, ledger compaction) at a random moment with SIGKILL "
            "(its process group, Spark's JVM included), recovers with the normal commands "
            "(ingest, build with its tests) and checks that every landed record is in its raw "
            "table exactly once; every --check-every runs and at the end, a rebuild from the "
            "log beside the served version (reprocess --no-switch) must equal every model. "
            "Prints where each kill landed and what each recovery found; exits 1 on any loss, "
            "duplicate, failed test or difference. About 1.5 minutes per run."
        ),
    )
    _add_target(chaos)
    chaos.add_argument("--runs", type=int, default=10, help="how many kills (default: 10)")
    chaos.add_argument(
        "--seed", type=int, default=1, help="seeds the log, the steps and the moments (default: 1)"
    )
    chaos.add_argument(
        "--events", type=int, default=20_000, help="about how many events the log holds"
    )
    chaos.add_argument("--days", type=float, default=3.0, help="the log's period in days")
    chaos.add_argument(
        "--check-every",
        type=int,
        default=10,
        help="compare every model with a rebuild from the log every N runs (and after the last)",
    )
    chaos.add_argument(
        "--steps",
        default=",".join(CHAOS_STEPS),
        help=f"the steps to kill, comma-separated (default: all: {','.join(CHAOS_STEPS)})",
    )
    chaos.add_argument(
        "--schema",
        default="chaos",
        help="the campaign's schema (and <schema>_raw, <schema>__v<N>): dropped at its start",
    )
    chaos.add_argument(
        "--kafka",
        action="store_true",
        help="produce the log to Kafka topics of the campaign's own (<schema>_<time>.<stream>) "
        "and ingest from them, instead of landing files (see --bootstrap-servers)",
    )
    _add_kafka_settings(chaos)
    chaos.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where its log and landing zone go (default: data/chaos; emptied at its start)",
    )
    bench = commands.add_parser(
        "bench",
        help="benchmark: full refresh, incremental runs and a backfill, against baselines",
        description=(
            "Generate a 30-day log of --events events, ingest 98%% of it and time a full "
            "refresh, then an incremental run after 1%% new data, another after 1%% of which a "
            "tenth is up to 3 days late, a 30-day backfill of orders_daily against dbt's "
            "microbatch strategy, and the dbt build of sessions and orders_daily against a "
            "hand-written PySpark job; peak memory of each step. After the late step and "
            "after each fixed batch, every model is compared with a full refresh of the same "
            "records. Prints a markdown table and writes it, its JSON and a chart to "
            "--work-dir; exits 1 when a check finds a difference. Drops and rebuilds --schema. "
            "With --successive N, instead: a full refresh, then N incremental runs of 1%% each "
            "one after another in the same Spark JVM (how the cost of a run changes as the JVM "
            "warms up), then every model compared with a full refresh."
        ),
    )
    _add_target(bench)
    bench.add_argument(
        "--events", type=int, default=1_000_000, help="events in the log (default 1000000)"
    )
    bench.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    bench.add_argument(
        "--schema",
        default="kappa_shop_bench",
        help="schema to build in, dropped first; raw tables go to <schema>_raw "
        "(default kappa_shop_bench)",
    )
    bench.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the log, landing zone and results go (default: data/bench); a log "
        "generated earlier with the same settings is reused",
    )
    bench.add_argument(
        "--successive",
        type=int,
        default=0,
        metavar="N",
        help="time N incremental runs of 1%% each, one after another in one JVM, after a "
        "full refresh of the rest of the on-time log, instead of the standard steps "
        "(results: bench-successive-<events>.md)",
    )
    cluster = commands.add_parser(
        "cluster",
        help="start, stop or show a Spark cluster with a Thrift Server on 127.0.0.1",
        description=(
            "A Spark standalone master, two workers and a Spark Thrift Server on that master, "
            "from the pip install of PySpark, all bound to 127.0.0.1; state, logs and work "
            "directories in .cluster/. Ports come from the `cluster` target of profiles.yml "
            "(KAPPA_SHOP_THRIFT_PORT, KAPPA_SHOP_SPARK_MASTER), so dbt --target cluster and "
            "kappa-shop --target cluster reach it. `up` and `down` are safe to repeat."
        ),
    )
    _add_up_down_status(cluster, "the cluster", "every process", 180.0)
    cluster.add_argument(
        "--ui-port",
        type=int,
        default=int(os.environ.get("KAPPA_SHOP_CLUSTER_UI_PORT", "8180")),
        help="web UI port of the master; the workers and the Thrift Server take the next three "
        "(default: KAPPA_SHOP_CLUSTER_UI_PORT or 8180)",
    )
    kafka = commands.add_parser(
        "kafka",
        help="start, stop or show a single-node Apache Kafka broker on 127.0.0.1",
        description=(
            "Apache Kafka in KRaft mode (broker and controller in one JVM) from its jars on "
            "Maven Central, fetched once into ~/.cache/kappa-shop/; bound to 127.0.0.1 on "
            "KAPPA_SHOP_KAFKA_PORT (default 9092) and the next port (its controller); data, "
            "state and log in .kafka/. `up` and `down` are safe to repeat."
        ),
    )
    _add_up_down_status(kafka, "the broker", "it", 90.0)
    coverage = commands.add_parser(
        "docs-coverage",
        help="fail on any undocumented source, seed, model, column, macro or exposure",
        description=(
            "Read target/manifest.json (from `dbt parse`) and, when present, target/catalog.json "
            "(from `dbt docs generate` after a build), and list every source, seed, model, "
            "column, macro argument, exposure or singular test without a description, and every "
            "column of a built table that its YAML does not declare. Exit 1 if there is any."
        ),
    )
    coverage.add_argument(
        "--catalog",
        choices=("auto", "yes", "no"),
        default="auto",
        help="compare with the built tables' columns in target/catalog.json: auto (when it "
        "exists, the default), yes (required), no",
    )
    lineage = commands.add_parser(
        "lineage",
        help="draw the DAG from the manifest into docs/lineage.svg (--check: is it current?)",
        description=(
            "Draw the lineage of the whole DAG (sources, seeds, models, exposures and their "
            "dependencies) from target/manifest.json into docs/lineage.svg, the picture in the "
            "README. Run `dbt parse` first (make lineage does both)."
        ),
    )
    lineage.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if docs/lineage.svg differs from what the manifest gives",
    )
    slim = commands.add_parser(
        "slim-ci",
        help="build and test only the models changed since main, and what depends on them",
        description=(
            "Slim CI, as a pull-request workflow runs it: compare the project with a saved "
            "manifest of main (--state DIR holding manifest.json, or --base-ref REF to make one "
            "from git), then `dbt build --select state:modified+ --full-refresh` in the "
            "target: the changed models are rebuilt from the log with everything downstream of "
            "them, and tested. The target must hold a build of main (raw tables and the models "
            "upstream of the change)."
        ),
    )
    _add_target(slim)
    base = slim.add_mutually_exclusive_group(required=True)
    base.add_argument(
        "--state", type=Path, help="a directory with main's manifest.json (a CI artifact)"
    )
    base.add_argument(
        "--base-ref",
        help="a git ref (such as main) to parse into a manifest first, in a temporary directory",
    )
    slim.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would be built (dbt ls), build nothing",
    )
    return parser


def _add_up_down_status(
    parser: argparse.ArgumentParser, what: str, stopped: str, timeout: float
) -> None:
    """The action (up, down, status) and --timeout of a command that runs a service here."""
    parser.add_argument(
        "action",
        choices=("up", "down", "status"),
        help=f"up: start and wait until it answers; down: stop {stopped}; status: show",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        help=f"seconds to wait for {what} to answer (up) or to stop (down)",
    )


def _add_kafka_settings(parser: argparse.ArgumentParser) -> None:
    """--bootstrap-servers, --kafka-option and --topic-prefix, for a command's --kafka."""
    parser.add_argument(
        "--bootstrap-servers",
        default=None,
        help="with --kafka: the brokers (default: KAPPA_SHOP_KAFKA_BOOTSTRAP_SERVERS, else the "
        "broker of `kappa-shop kafka up`)",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --kafka: a Kafka client setting passed through (security.protocol=SSL, "
        "sasl.mechanism=..., ssl.truststore.location=...); repeat for more",
    )
    parser.add_argument(
        "--topic-prefix",
        default="",
        help="with --kafka: the topics are <prefix><stream>, such as shop.order_events "
        "(default: no prefix)",
    )


def _kafka_source(arguments: argparse.Namespace) -> Any:
    """The KafkaSource of a command's --kafka settings, after probing its brokers (one line
    when none answers)."""
    from kappa_shop.ingest.ingestion import KafkaSource
    from kappa_shop.runtime.kafka import check_brokers, default_bootstrap_servers

    source = KafkaSource(
        arguments.bootstrap_servers or default_bootstrap_servers(),
        dict(option.split("=", 1) for option in arguments.kafka_option),
        arguments.topic_prefix,
    )
    if not source.options:  # (a broker that needs TLS or SASL does not answer a probe)
        check_brokers(source.bootstrap_servers)
    return source


def _run(arguments: argparse.Namespace) -> int:
    from kappa_shop.runtime.environment import (
        check_java,
        find_project_root,
        prepare_process_environment,
    )

    command = arguments.command
    if command == "generate":
        return _generate(arguments)
    if command == "deliver":
        return _deliver(arguments)
    if command in ("docs-coverage", "lineage"):
        return _docs(arguments)

    project_root = find_project_root(arguments.project_dir)
    if command == "ingest":  # bad input is one line, before Spark starts
        from kappa_shop.ingest.ingestion import check_landing_zone

        if arguments.landing is not None:
            check_landing_zone(arguments.landing.resolve())
    if getattr(arguments, "kafka", False) and not all(
        "=" in option for option in arguments.kafka_option
    ):
        raise KappaShopError("--kafka-option takes NAME=VALUE, such as security.protocol=SSL")
    java = check_java()
    if command == "kafka":
        return _kafka(arguments, project_root)
    if command == "produce":
        return _produce(arguments)
    if command == "check" and arguments.target is None:
        print(f"ok: Java {java.major_version} at {java.executable}; project at {project_root}")
        return 0

    prepare_process_environment(project_root)
    from kappa_shop.runtime.dbt import DbtProject

    project = DbtProject(root=project_root, target=getattr(arguments, "target", None))
    if command == "check":
        print(f"ok: Java {java.major_version} at {java.executable}; project at {project_root}")
        return _check_target(project)
    if command == "cluster":
        return _cluster(arguments, project)
    if command == "ingest":
        from kappa_shop.ingest.ingestion import ingest

        if arguments.max_files_per_batch is not None and arguments.max_files_per_batch < 1:
            raise KappaShopError("--max-files-per-batch must be at least 1")
        source: Any = arguments.landing
        jars: list[Path] = []
        if arguments.kafka:
            from kappa_shop.runtime.kafka import connector_jars

            source = _kafka_source(arguments)
            jars = connector_jars()
        spark = project.spark(extra_jars=jars)
        warehouse = project.warehouse()
        shown = "the topics" if arguments.kafka else arguments.landing
        print(f"Ingesting what is new in {shown} into {project.raw_schema}", flush=True)
        report = ingest(
            spark,
            source,
            project.raw_schema,
            max_files_per_batch=arguments.max_files_per_batch,
            pause_between_writes=arguments.pause_between_writes,
            warehouse=warehouse,
        )
        if not report.batches:
            print(f"Nothing new to ingest in {arguments.landing or 'the topics'}.")
        else:
            print(
                f"Ingested {report.records:,} records in {len(report.batches)} batch(es) "
                f"into {report.raw_schema}."
            )
        return 0

    if command == "verify":
        return _verify(arguments, project)
    if command == "bench":
        return _bench(arguments, project)
    if command == "slim-ci":
        return _slim_ci(arguments, project)
    if command in ("reprocess", "rollback", "versions"):
        return _serving(arguments, project)
    if command == "chaos":
        return _chaos(arguments, project)

    from kappa_shop.serving.pipeline import build, format_summary

    summary = build(
        project,
        docs=not arguments.no_docs,
        log_source=arguments.log,
        tests=not arguments.no_tests,
        full_refresh=arguments.full_refresh,
    )
    print(format_summary(summary))
    return 0


def _serving(arguments: argparse.Namespace, project: Any) -> int:
    """reprocess, rollback, versions (kappa_shop.serving.versions)."""
    from kappa_shop.serving.versions import (
        Reprocess,
        check_keep,
        drop_old_versions,
        list_versions,
        rollback,
    )

    if arguments.command == "versions":
        check_keep(arguments.keep)  # before Spark starts

    if arguments.command == "reprocess":
        Reprocess(project).run(switch=not arguments.no_switch)
    elif arguments.command == "rollback":
        rollback(project)
    else:
        if arguments.drop_old:
            drop_old_versions(project, arguments.keep)
        print(list_versions(project))
    return 0


def _chaos(arguments: argparse.Namespace, project: Any) -> int:
    """A chaos campaign, run from this process without starting Spark in it."""
    from kappa_shop.ops.chaos import Campaign, ChaosConfig, format_report, write_results
    from kappa_shop.runtime.warehouse import check_schema_name

    check_schema_name(arguments.schema, project.target_name)
    if arguments.schema in (project.schema, project.raw_schema):
        raise KappaShopError(
            f"chaos drops its schema ({arguments.schema}) at its start: give it one of its own "
            f"with --schema, not the project's ({project.schema})"
        )
    config = ChaosConfig(
        runs=arguments.runs,
        seed=arguments.seed,
        events=arguments.events,
        days=arguments.days,
        check_every=arguments.check_every,
        steps=tuple(step.strip() for step in arguments.steps.split(",") if step.strip()),
        target=arguments.target,
    )
    config.validate()
    if arguments.kafka:
        import time
        from dataclasses import replace

        # topics of the campaign's own: empty at its start, whatever ran before
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        source = _kafka_source(arguments)
        config = replace(
            config,
            kafka=replace(source, topic_prefix=f"{source.topic_prefix}{arguments.schema}_{stamp}."),
        )
    work_dir = (arguments.work_dir or project.root / "data" / "chaos").resolve()
    if work_dir.exists():
        import shutil

        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    report = Campaign(project.root, config, work_dir, arguments.schema).run()
    print(format_report(report))
    print(f"Wrote {write_results(report, work_dir)}")
    if report.problems:
        print(
            f"kappa-shop: chaos found {len(report.problems)} problem(s) (listed above)",
            file=sys.stderr,
        )
        return 1
    return 0


def _bench(arguments: argparse.Namespace, project: object) -> int:
    from kappa_shop.bench.runner import (
        format_report,
        format_successive,
        run_bench,
        run_successive,
        write_results,
    )
    from kappa_shop.runtime.dbt import DbtProject
    from kappa_shop.runtime.warehouse import check_schema_name

    assert isinstance(project, DbtProject)
    check_schema_name(arguments.schema, project.target_name)
    os.environ["KAPPA_SHOP_SCHEMA"] = arguments.schema
    work_dir = (arguments.work_dir or project.root / "data" / "bench").resolve()
    if arguments.successive:
        report = run_successive(
            project, arguments.events, work_dir, arguments.successive, seed=arguments.seed
        )
        print(format_successive(report))
    else:
        report = run_bench(project, arguments.events, work_dir, seed=arguments.seed)
        print(format_report(report))
    for path in write_results(report, work_dir):
        print(f"Wrote {path}")
    return _bench_status(report)


def _bench_status(report: Any) -> int:
    """1 when an equality check of the benchmark found a difference (a figure measured on
    wrong tables is no figure), with one line naming the checks and what each found; else
    0."""
    failed = report.failed_checks()
    if not failed:
        return 0
    print(
        f"kappa-shop bench: {len(failed)} equality check(s) found a difference: "
        + "; ".join(f"{name}: {report.checks[name]}" for name in failed),
        file=sys.stderr,
    )
    return 1


def _check_target(project: object) -> int:
    from kappa_shop.runtime.dbt import DbtProject
    from kappa_shop.runtime.delta import delta_version
    from kappa_shop.runtime.fast_start import FILE_SYSTEM
    from kappa_shop.runtime.spark import check_master_reachable, local_file_system
    from kappa_shop.runtime.warehouse import table_names

    assert isinstance(project, DbtProject)
    output, target = project.output, project.target_name
    warehouse = project.warehouse()
    if output.get("method") == "thrift":
        version = warehouse.sql("select version() as version")[0]["version"]
        print(
            f"ok: target {target!r}: Spark {version} answers at {output['host']}:{output['port']}"
        )
        master = str((output.get("ingestion_spark_conf") or {}).get("spark.master", ""))
        check_master_reachable(master, target)
        print(f"ok: target {target!r}: the master for ingestion answers at {master}")
    if output.get("method") == "session":
        file_system = local_file_system(project.spark())
        print(
            f"ok: target {target!r}: local files through {file_system}"
            + (" (the fast start's: docs/fast-start.md)" if file_system == FILE_SYSTEM else "")
        )
        print(_class_archive_line(project.spark(), target))
    delta = delta_version(output.get("server_side_parameters") or {})
    if delta is not None:
        print(
            f"ok: target {target!r}: Delta Lake {delta} (the installed delta-spark's version); "
            "its models are Delta tables"
        )
    raw = table_names(warehouse, project.raw_schema)
    print(
        f"ok: target {target!r}: models go to schema {project.schema}; the raw schema "
        f"{project.raw_schema} "
        + (f"holds {len(raw)} tables" if raw else "is empty or missing (nothing ingested yet)")
    )
    return 0


def _class_archive_line(spark: object, target: str) -> str:
    """Whether the embedded Spark maps its classes from the fast start's class archive
    (docs/fast-start.md): a JVM that cannot use it starts as usual and says nothing."""
    from kappa_shop.runtime.class_archive import archive_status

    archive, in_use = archive_status(spark)
    if archive is None:
        return f"ok: target {target!r}: Spark loads its classes from its jars (no class archive)"
    if in_use:
        return f"ok: target {target!r}: Spark maps its classes from the class archive {archive}"
    if in_use is None:
        return f"ok: target {target!r}: class archive {archive} (whether Java uses it is unknown)"
    return (
        f"note: target {target!r}: the class archive {archive} is not in use (missing, or written"
        f" for other jars or another Java): delete {Path(archive).parent} and run `make setup"
        " KAPPA_SHOP_FAST_START=1` to build it again"
    )


def _cluster(arguments: argparse.Namespace, project: object) -> int:
    from kappa_shop.ops import cluster
    from kappa_shop.runtime.dbt import DbtProject
    from kappa_shop.runtime.spark import profile_output

    assert isinstance(project, DbtProject)
    home = project.root / ".cluster"
    if arguments.action == "status":
        return 0 if cluster.status(home) else 1
    if arguments.action == "down":
        cluster.down(home, timeout=min(arguments.timeout, 60.0))
        return 0
    output = profile_output(project.profiles_dir, "cluster")
    settings = cluster.settings_from_profile(output, home, arguments.ui_port)
    print(f"Starting a Spark cluster on 127.0.0.1 (state and logs in {home})")
    cluster.up(settings, project.root / "conf", timeout=arguments.timeout)
    return 0


def _kafka(arguments: argparse.Namespace, project_root: Path) -> int:
    from kappa_shop.ops import broker as kafka

    home = project_root / ".kafka"
    if arguments.action == "status":
        return 0 if kafka.status(home) else 1
    if arguments.action == "down":
        kafka.down(home, timeout=min(arguments.timeout, 60.0))
        return 0
    kafka.up(home, timeout=arguments.timeout)
    return 0


def _produce(arguments: argparse.Namespace) -> int:
    from kappa_shop.log.landing import batch_numbers
    from kappa_shop.log.produce import produce
    from kappa_shop.runtime.kafka import check_brokers, default_bootstrap_servers, kafka_spark

    batches = batch_numbers(arguments.log) if arguments.all else arguments.batches
    servers = arguments.bootstrap_servers or default_bootstrap_servers()
    check_brokers(servers)
    produced = produce(
        kafka_spark(), arguments.log, batches, servers, topic_prefix=arguments.topic_prefix
    )
    print(
        f"Produced batch(es) {_describe(produced.batches)}: {produced.records:,} records to "
        f"{servers} ("
        + ", ".join(
            f"{topic} {count:,}" for topic, count in sorted(produced.records_by_topic.items())
        )
        + f"); {produced.partitions_already_there} partition file(s) were already there."
    )
    return 0


def _generate(arguments: argparse.Namespace) -> int:
    from kappa_shop.log.generator import generate

    config = GeneratorConfig(
        **{field.name: getattr(arguments, field.name) for field in fields(GeneratorConfig)}
    )
    result = generate(config, arguments.out)
    totals = result.manifest["totals"]
    malformed = sum(totals["malformed"].values())
    print(
        f"Wrote {totals['records']:,} records ({totals['valid']:,} valid events, "
        f"{totals['duplicate']:,} redeliveries, {totals['conflicting_duplicate']:,} conflicting, "
        f"{malformed:,} malformed; {totals['late']:,} late) in {len(result.manifest['batches'])} "
        f"arrival batches to {result.out_dir} in {result.seconds:.1f} s "
        f"(peak memory {result.peak_rss_mib:.0f} MiB)."
    )
    return 0


def _deliver(arguments: argparse.Namespace) -> int:
    from kappa_shop.log.landing import batch_numbers, deliver

    batches = batch_numbers(arguments.log) if arguments.all else arguments.batches
    delivered = deliver(arguments.log, arguments.landing, batches)
    print(
        f"Delivered batch(es) {_describe(delivered.batches)}: {delivered.files_delivered} files "
        f"landed in {arguments.landing}, {delivered.files_already_there} were already there."
    )
    return 0


def _vars_mapping(text: str) -> dict[str, Any]:
    """--vars as dbt reads it (YAML, of which JSON is a part): a mapping, else one clear error."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KappaShopError(f"--vars is not YAML or JSON: {str(error).splitlines()[0]}") from None
    if not isinstance(value, dict):
        raise KappaShopError(f"--vars takes a mapping, such as '{{name: value}}'; got {text!r}")
    return value


def _verify(arguments: argparse.Namespace, project: object) -> int:
    from kappa_shop.proof.verify import VerifyConfig, format_report, verify

    try:
        seeds = [int(seed) for seed in arguments.seeds.split(",")]
    except ValueError:
        raise KappaShopError(
            f"--seeds takes integers separated by commas: {arguments.seeds!r}"
        ) from None
    dbt_vars = _vars_mapping(arguments.vars)
    kafka = None
    if arguments.kafka:
        from kappa_shop.runtime.dbt import DbtProject
        from kappa_shop.runtime.kafka import connector_jars

        assert isinstance(project, DbtProject)
        kafka = _kafka_source(arguments)
        project.spark(extra_jars=connector_jars())  # the first start: with the connector
    failed = []
    for seed in seeds:
        config = VerifyConfig(
            seed=seed,
            events=arguments.events,
            rounds=arguments.rounds,
            days=arguments.days,
            dbt_vars=dbt_vars,
            data_tests=arguments.data_tests,
            selector=arguments.selector,
            kafka=kafka,
        )
        work_dir = arguments.work_dir or Path("data") / "verify" / str(seed)
        report = verify(project, config, work_dir.resolve())  # type: ignore[arg-type]
        print(format_report(report))
        if not report.passed:
            failed.append(seed)
    if failed:
        print(
            f"kappa-shop: the proof failed for seed(s) {', '.join(map(str, failed))}",
            file=sys.stderr,
        )
        return 1
    return 0


def _docs(arguments: argparse.Namespace) -> int:
    from kappa_shop.ci import docs_coverage, lineage
    from kappa_shop.runtime.environment import find_project_root

    root = find_project_root(arguments.project_dir)
    if arguments.command == "docs-coverage":
        with_catalog = {"auto": None, "yes": True, "no": False}[arguments.catalog]
        gaps = docs_coverage.check(root / "target", with_catalog=with_catalog)
        print(docs_coverage.format_gaps(gaps), file=sys.stderr if gaps else sys.stdout)
        return 1 if gaps else 0
    if arguments.check:
        picture = lineage.check_picture(root)
        print(f"ok: {picture.relative_to(root)} shows the DAG of target/manifest.json")
        return 0
    picture = lineage.write_picture(root)
    print(f"Wrote {picture.relative_to(root)} from target/manifest.json")
    return 0


def _slim_ci(arguments: argparse.Namespace, project: object) -> int:
    from kappa_shop.ci.slim_ci import slim_ci
    from kappa_shop.runtime.dbt import DbtProject

    assert isinstance(project, DbtProject)
    outcome = slim_ci(
        project, state=arguments.state, base_ref=arguments.base_ref, dry_run=arguments.dry_run
    )
    return 0 if outcome.passed else 1


def _describe(batches: list[int]) -> str:
    if len(batches) > 3 and batches == list(range(batches[0], batches[-1] + 1)):
        return f"{batches[0]}-{batches[-1]}"
    return ",".join(str(batch) for batch in batches)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the subcommand, and turn known errors into one line."""
    arguments = _parser().parse_args(argv)
    try:
        return _run(arguments)
    except KappaShopError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kappa-shop: interrupted", file=sys.stderr)
        return 130
