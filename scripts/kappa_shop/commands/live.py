"""`kappa-shop live`: the long-running service, from the log to every model, cycle by cycle."""

from __future__ import annotations

import argparse
from pathlib import Path

from kappa_shop.commands.common import (
    Subcommands,
    add_kafka_settings,
    add_target,
    log_source,
    open_project,
    project_root,
)
from kappa_shop.errors import KappaShopError
from kappa_shop.serving.compaction import DEFAULT_LIMIT


def register(commands: Subcommands) -> None:
    live = commands.add_parser(
        "live",
        help="run as a service: ingest, build what is new, record freshness, until stopped",
        description=(
            "One process, one Spark, looping until SIGTERM or Ctrl-C (which end it at a safe "
            "point): every cycle ingests what the log holds (exactly once), builds the served "
            "version of every model the new batches reach, runs the data tests every few "
            "cycles, records the cycle in <schema>_raw.kappa_live_cycles and prints one line "
            "with its completion latency (a record's time in the log to every model it reaches "
            "written). A cycle that overruns is followed at once by one that takes everything "
            "new. A kill at any moment is repaired by the next start. `kappa-shop status` "
            "shows how it goes."
        ),
    )
    where = live.add_mutually_exclusive_group(required=True)
    where.add_argument("--landing", type=Path, help="the landing zone to ingest from")
    where.add_argument("--kafka", action="store_true", help="ingest the log's topics from Kafka")
    add_kafka_settings(live)
    add_target(live)
    live.add_argument(
        "--every",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="start a cycle every SECONDS (default 10; 0: one after another)",
    )
    live.add_argument(
        "--cycles", type=int, default=None, help="stop after this many cycles (default: never)"
    )
    live.add_argument(
        "--tests-every",
        type=int,
        default=10,
        metavar="N",
        help="run the data tests after every Nth cycle with new data (default 10; 0: never)",
    )
    live.add_argument(
        "--compact-after",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="FILES",
        help=(
            "compact the service's own tables (its records of the cycles) when one holds more "
            f"than FILES data files, between two cycles (default {DEFAULT_LIMIT}; 0: never)"
        ),
    )
    live.add_argument(
        "--select",
        nargs="+",
        default=[],
        help="build only these models (dbt's selection syntax; default: every model)",
    )
    live.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ingest.ingestion import check_landing_zone
    from kappa_shop.serving.live import run_live

    root = project_root(arguments)
    if arguments.landing is not None:  # bad input is one line, before Spark starts
        check_landing_zone(arguments.landing.resolve())
    if arguments.compact_after < 0:
        raise KappaShopError("--compact-after must be 0 (never) or more")
    project = open_project(arguments, root)
    source, jars = log_source(arguments)
    run_live(
        project,
        source,
        every=arguments.every,
        cycles=arguments.cycles,
        tests_every=arguments.tests_every,
        select=arguments.select,
        extra_jars=jars,
        compact_after=arguments.compact_after,
    )
    return 0
