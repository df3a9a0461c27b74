"""The `kappa-shop` command: one entry point, one subcommand per job.

    kappa-shop check     is this machine ready (Java for Spark)?
    kappa-shop build     load the sample log, dbt build, dbt docs generate, summary

Ordinary mistakes (no Java, not inside the project, a failed dbt command) end with one line
on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kappa_shop import __version__
from kappa_shop.errors import KappaShopError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kappa-shop",
        description=(
            "Tools for the kappa_shop dbt project: an append-only shop event log on Spark and "
            "the incremental models derived from it."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the dbt project root (default: the nearest directory upward with dbt_project.yml)",
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    subcommands.add_parser(
        "check",
        help="check that this machine can run the project (Java 17 for Spark)",
        description="Check the prerequisites that pip cannot install: a Java 17 runtime.",
    )

    build = subcommands.add_parser(
        "build",
        help="load the sample log, dbt build everything, generate the docs, print a summary",
        description=(
            "Load the sample event log (seeds/sample_log) as the raw tables, run `dbt build` "
            "on every derived model and test, run `dbt docs generate`, then print the tables "
            "built with their row counts. All in one process, so Spark starts once."
        ),
    )
    build.add_argument(
        "--target",
        default=None,
        help="dbt target from profiles.yml: local (embedded Spark, the default) or cluster",
    )
    build.add_argument(
        "--no-docs", action="store_true", help="skip `dbt docs generate` (faster when iterating)"
    )
    return parser


def _run(arguments: argparse.Namespace) -> int:
    from kappa_shop.environment import check_java, find_project_root, prepare_process_environment

    project_root = find_project_root(arguments.project_dir)
    java = check_java()
    if arguments.command == "check":
        print(f"ok: Java {java.major_version} at {java.executable}; project at {project_root}")
        return 0

    prepare_process_environment(project_root)
    from kappa_shop.dbt import DbtProject
    from kappa_shop.pipeline import build, format_summary

    project = DbtProject(root=project_root, target=arguments.target)
    print(format_summary(build(project, docs=not arguments.no_docs)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the subcommand, and turn known errors into one line."""
    arguments = _parser().parse_args(argv)
    try:
        return _run(arguments)
    except KappaShopError as error:
        print(f"kappa-shop: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kappa-shop: interrupted", file=sys.stderr)
        return 130
