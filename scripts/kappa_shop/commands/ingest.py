"""`kappa-shop ingest`: ingest landed files (or Kafka topics) into the raw tables, exactly once."""

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


def register(commands: Subcommands) -> None:
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
    add_kafka_settings(ingest)
    add_target(ingest)
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
    ingest.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ingest.ingestion import check_landing_zone, ingest

    root = project_root(arguments)
    if arguments.landing is not None:  # bad input is one line, before Spark starts
        check_landing_zone(arguments.landing.resolve())
    project = open_project(arguments, root)
    if arguments.max_files_per_batch is not None and arguments.max_files_per_batch < 1:
        raise KappaShopError("--max-files-per-batch must be at least 1")
    source, jars = log_source(arguments)
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
