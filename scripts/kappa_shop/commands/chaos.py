"""`kappa-shop chaos`: kill the pipeline at random moments, recover, check nothing was lost."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from kappa_shop.commands.common import (
    Subcommands,
    add_kafka_settings,
    add_target,
    kafka_source,
    open_project,
)
from kappa_shop.errors import KappaShopError
from kappa_shop.ops.chaos import STEPS as CHAOS_STEPS


def register(commands: Subcommands) -> None:
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
    add_target(chaos)
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
    add_kafka_settings(chaos)
    chaos.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where its log and landing zone go (default: data/chaos; emptied at its start)",
    )
    chaos.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    """A chaos campaign, run from this process without starting Spark in it."""
    from kappa_shop.ops.chaos import Campaign, ChaosConfig, format_report, write_results
    from kappa_shop.runtime.warehouse import check_schema_name

    project = open_project(arguments)
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
        # topics of the campaign's own: empty at its start, whatever ran before
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        source = kafka_source(arguments)
        config = replace(
            config,
            kafka=replace(source, topic_prefix=f"{source.topic_prefix}{arguments.schema}_{stamp}."),
        )
    work_dir = (arguments.work_dir or project.root / "data" / "chaos").resolve()
    if work_dir.exists():
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
