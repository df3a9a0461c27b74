"""`kappa-shop rollback`: serve the version served before the current one again."""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, add_target, open_project


def register(commands: Subcommands) -> None:
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
    add_target(rollback)
    rollback.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.serving.versions import rollback

    rollback(open_project(arguments))
    return 0
