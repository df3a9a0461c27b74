"""`kappa-shop reprocess`: rebuild every model beside the served version, check it, switch."""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, add_target, open_project


def register(commands: Subcommands) -> None:
    reprocess = commands.add_parser(
        "reprocess",
        help="rebuild every model from the log beside the served version, check it, switch",
        description=(
            "Kappa reprocessing (docs/reprocessing.md): build the whole DAG from the log (the "
            "raw tables) into a new version, <schema>__v<N+1>, while readers keep reading the "
            "served one through the views in <schema>; catch it up to the newest ingested "
            "batch; run its data tests; print, per serving name, the rows the new "
            "version adds, removes and changes against the served one; then point every view "
            "at it. A failed test, or a kill at any step, leaves the served version as it was."
        ),
    )
    add_target(reprocess)
    reprocess.add_argument(
        "--no-switch",
        action="store_true",
        help="stop after the comparison: build, catch up, test and compare, but keep serving "
        "the current version (a later reprocess starts over)",
    )
    reprocess.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.serving.reprocess import Reprocess

    Reprocess(open_project(arguments)).run(switch=not arguments.no_switch)
    return 0
