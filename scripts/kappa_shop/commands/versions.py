"""`kappa-shop versions`: list the schema's versions; --drop-old drops those beyond --keep."""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, add_target, open_project


def register(commands: Subcommands) -> None:
    versions = commands.add_parser(
        "versions",
        help="list the schema's versions; --drop-old drops the old ones",
        description=(
            "List the versions of <schema> (its physical schemas <schema>__v<N>), which one is "
            "served and what happened to each; with --drop-old, drop all but --keep of them: "
            "the served one first, then the one a rollback would serve, then the newest others."
        ),
    )
    add_target(versions)
    versions.add_argument("--drop-old", action="store_true", help="drop the versions beyond --keep")
    versions.add_argument(
        "--keep",
        type=int,
        default=2,
        help="with --drop-old: how many versions to keep, the served one included (default: 2, "
        "the served one and the one a rollback would serve)",
    )
    versions.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.serving.versions import check_keep, drop_old_versions, list_versions

    project = open_project(arguments)
    check_keep(arguments.keep)  # before Spark starts
    if arguments.drop_old:
        drop_old_versions(project, arguments.keep)
    print(list_versions(project))
    return 0
