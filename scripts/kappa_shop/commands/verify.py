"""`kappa-shop verify`: the proof, incremental builds over random schedules equal a full refresh."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kappa_shop.commands.common import (
    Subcommands,
    add_kafka_settings,
    add_target,
    kafka_source,
    open_project,
    vars_mapping,
)
from kappa_shop.errors import KappaShopError


def register(commands: Subcommands) -> None:
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
        "--no-repeats",
        action="store_true",
        help="leave out the two repeated builds (a round built twice, and each model's last run "
        "replayed as after a crash before its commit): a quicker proof of a target or of Kafka, "
        "whose writes are the SQL that a full proof on local or local_delta repeats",
    )
    verify.add_argument(
        "--kafka",
        action="store_true",
        help="produce each round to Kafka (topics of the proof's own, deleted at its end) and "
        "ingest from there, instead of landing files",
    )
    add_kafka_settings(verify)
    add_target(verify)
    verify.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the generated log and its landing zone go (default: data/verify/<seed>)",
    )
    verify.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.proof.verify import VerifyConfig, format_report, verify
    from kappa_shop.runtime.kafka import connector_jars

    try:
        seeds = [int(seed) for seed in arguments.seeds.split(",")]
    except ValueError:
        raise KappaShopError(
            f"--seeds takes integers separated by commas: {arguments.seeds!r}"
        ) from None
    dbt_vars = vars_mapping(arguments.vars)
    project = open_project(arguments)
    kafka = None
    if arguments.kafka:
        kafka = kafka_source(arguments)
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
            repeats=not arguments.no_repeats,
        )
        work_dir = arguments.work_dir or Path("data") / "verify" / str(seed)
        report = verify(project, config, work_dir.resolve())
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
