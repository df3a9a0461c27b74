"""`kappa-shop docs-coverage`: fail on any undocumented source, seed, model, column or macro."""

from __future__ import annotations

import argparse
import sys

from kappa_shop.commands.common import Subcommands, project_root


def register(commands: Subcommands) -> None:
    coverage = commands.add_parser(
        "docs-coverage",
        help="fail on any undocumented source, seed, model, column, macro or exposure",
        description=(
            "Read target/manifest.json (from `dbt parse`) and, when present, target/catalog.json "
            "(from `dbt docs generate` after a build), and list every source, seed, model, "
            "column, macro argument, exposure or singular test without a description, and every "
            "column of a built table that its YAML does not declare. Exit 1 if there is any."
        ),
    )
    coverage.add_argument(
        "--catalog",
        choices=("auto", "yes", "no"),
        default="auto",
        help="compare with the built tables' columns in target/catalog.json: auto (when it "
        "exists, the default), yes (required), no",
    )
    coverage.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ci import docs_coverage

    root = project_root(arguments)
    with_catalog = {"auto": None, "yes": True, "no": False}[arguments.catalog]
    gaps = docs_coverage.check(root / "target", with_catalog=with_catalog)
    print(docs_coverage.format_gaps(gaps), file=sys.stderr if gaps else sys.stdout)
    return 1 if gaps else 0
