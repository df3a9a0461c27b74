"""`kappa-shop build`: the log into the raw tables, dbt build of the served version, docs."""

from __future__ import annotations

import argparse

from kappa_shop.commands.common import Subcommands, add_target, open_project


def register(commands: Subcommands) -> None:
    build = commands.add_parser(
        "build",
        help="log -> raw tables, dbt build, dbt docs generate, summary",
        description=(
            "Put the sample event log in the raw tables (generated: generate, deliver and "
            "ingest it batch by batch; seeds: load seeds/sample_log; ingested: load nothing, "
            "build from the log `kappa-shop ingest` put there), run `dbt build` on every "
            "derived model and data test into the schema's served version "
            "(docs/reprocessing.md), run `dbt docs generate`, then print the tables with their "
            "row counts. All in one process, so Spark starts once."
        ),
    )
    add_target(build)
    build.add_argument(
        "--log",
        choices=("generated", "seeds", "ingested"),
        default="generated",
        help="where the log comes from: the generated sample (default), the seeds' sample, or "
        "ingested: the raw tables as `kappa-shop ingest` left them (your log; nothing loaded)",
    )
    build.add_argument(
        "--no-docs", action="store_true", help="skip `dbt docs generate` (faster when iterating)"
    )
    tests = build.add_mutually_exclusive_group()
    tests.add_argument("--no-tests", action="store_true", help="skip the data tests")
    tests.add_argument(
        "--unit-tests",
        action="store_true",
        help="run the unit tests too; a build leaves them out, as dbt recommends for production "
        "builds: their inputs are fixtures, not the log (CI runs them: `make test`, "
        "`kappa-shop slim-ci`)",
    )
    build.add_argument(
        "--full-refresh",
        action="store_true",
        help="rebuild every model from the whole log, in place in the served version (readers "
        "see each table as it is rebuilt; `kappa-shop reprocess` rebuilds beside it instead)",
    )
    build.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.serving.pipeline import build, format_summary

    summary = build(
        open_project(arguments),
        docs=not arguments.no_docs,
        log_source=arguments.log,
        tests=not arguments.no_tests,
        full_refresh=arguments.full_refresh,
        unit_tests=arguments.unit_tests,
    )
    print(format_summary(summary))
    return 0
