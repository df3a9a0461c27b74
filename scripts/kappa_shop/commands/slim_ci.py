"""`kappa-shop slim-ci`: build and test only what changed since a saved manifest of main."""

from __future__ import annotations

import argparse
from pathlib import Path

from kappa_shop.commands.common import Subcommands, add_target, open_project


def register(commands: Subcommands) -> None:
    slim = commands.add_parser(
        "slim-ci",
        help="build and test only the models changed since main, and what depends on them",
        description=(
            "Slim CI, as a pull-request workflow runs it: compare the project with a saved "
            "manifest of main (--state DIR holding manifest.json, or --base-ref REF to make one "
            "from git), then `dbt build --select state:modified+ --full-refresh` in the "
            "target: the changed models are rebuilt from the log with everything downstream of "
            "them, and tested. The target must hold a build of main (raw tables and the models "
            "upstream of the change)."
        ),
    )
    add_target(slim)
    base = slim.add_mutually_exclusive_group(required=True)
    base.add_argument(
        "--state", type=Path, help="a directory with main's manifest.json (a CI artifact)"
    )
    base.add_argument(
        "--base-ref",
        help="a git ref (such as main) to parse into a manifest first, in a temporary directory",
    )
    slim.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would be built (dbt ls), build nothing",
    )
    slim.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ci.slim_ci import slim_ci

    outcome = slim_ci(
        open_project(arguments),
        state=arguments.state,
        base_ref=arguments.base_ref,
        dry_run=arguments.dry_run,
    )
    return 0 if outcome.passed else 1
