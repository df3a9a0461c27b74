"""`kappa-shop status`: whether the live service runs, its last cycles, its freshness."""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, add_target, open_project


def register(commands: Subcommands) -> None:
    status = commands.add_parser(
        "status",
        help="the live service: running or not, its last cycles, latency, lag",
        description=(
            "Whether `kappa-shop live` runs on the schema's log, its last cycles (one line "
            "each), the completion latency of the records of the last hour (p50, p95, p99, "
            "max), the batches ingested but not yet built, and the records the log holds "
            "that are not ingested yet."
        ),
    )
    add_target(status)
    status.add_argument(
        "--last", type=int, default=10, help="how many of the last cycles to show (default 10)"
    )
    status.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.serving.live import status

    print(status(open_project(arguments), last=arguments.last))
    return 0
