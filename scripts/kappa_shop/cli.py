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
import sys
from collections.abc import Sequence
from pathlib import Path

from kappa_shop import __version__
from kappa_shop.commands import COMMANDS
from kappa_shop.errors import KappaShopError


def parser() -> argparse.ArgumentParser:
    """The command line: the global options, then each command's own (kappa_shop.commands)."""
    top = argparse.ArgumentParser(
        prog="kappa-shop",
        description=(
            "Tools for the kappa_shop dbt project: an append-only shop event log on Spark and "
            "the models derived from it."
        ),
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the dbt project root (default: the nearest directory upward with dbt_project.yml)",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the command, and turn known errors into one line."""
    arguments = parser().parse_args(argv)
    try:
        return int(arguments.handler(arguments))
    except KappaShopError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kappa-shop: interrupted", file=sys.stderr)
        return 130
