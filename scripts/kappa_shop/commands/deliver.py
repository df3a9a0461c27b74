"""`kappa-shop deliver`: land arrival batches of a generated log in a landing zone."""

from __future__ import annotations

import argparse
from pathlib import Path

from kappa_shop.commands.common import Subcommands, add_batches, describe


def register(commands: Subcommands) -> None:
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
    add_batches(deliver)
    deliver.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.log.landing import batch_numbers, deliver

    batches = batch_numbers(arguments.log) if arguments.all else arguments.batches
    delivered = deliver(arguments.log, arguments.landing, batches)
    print(
        f"Delivered batch(es) {describe(delivered.batches)}: {delivered.files_delivered} files "
        f"landed in {arguments.landing}, {delivered.files_already_there} were already there."
    )
    return 0
