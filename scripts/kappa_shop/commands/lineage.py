"""`kappa-shop lineage`: draw the DAG from the manifest; --check: is the picture current?"""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, project_root


def register(commands: Subcommands) -> None:
    lineage = commands.add_parser(
        "lineage",
        help="draw the DAG from the manifest into docs/lineage.svg (--check: is it current?)",
        description=(
            "Draw the lineage of the whole DAG (sources, seeds, models, exposures and their "
            "dependencies) from target/manifest.json into docs/lineage.svg, the picture in the "
            "README. Run `dbt parse` first (make lineage does both)."
        ),
    )
    lineage.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if docs/lineage.svg differs from what the manifest gives",
    )
    lineage.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.ci import lineage

    root = project_root(arguments)
    if arguments.check:
        picture = lineage.check_picture(root)
        print(f"ok: {picture.relative_to(root)} shows the DAG of target/manifest.json")
        return 0
    picture = lineage.write_picture(root)
    print(f"Wrote {picture.relative_to(root)} from target/manifest.json")
    return 0
