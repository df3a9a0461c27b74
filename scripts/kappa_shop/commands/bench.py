"""`kappa-shop bench`: a full refresh against incremental runs and the usual alternatives."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kappa_shop.commands.common import Subcommands, add_target, open_project
from kappa_shop.errors import KappaShopError


def register(commands: Subcommands) -> None:
    bench = commands.add_parser(
        "bench",
        help="benchmark: full refresh, incremental runs and a backfill, against baselines",
        description=(
            "Generate a 30-day log of --events events, ingest 98%% of it and time a full "
            "refresh, then an incremental run after 1%% new data, another after 1%% of which a "
            "tenth is up to 3 days late, a 30-day backfill of orders_daily against dbt's "
            "microbatch strategy, and the dbt build of sessions and orders_daily against a "
            "hand-written PySpark job; peak memory of each step. After the late step and "
            "after each fixed batch, every model is compared with a full refresh of the same "
            "records. Prints a markdown table and writes it, its JSON and a chart to "
            "--work-dir; exits 1 when a check finds a difference. Drops and rebuilds --schema. "
            "With --successive N, instead: a full refresh, then N incremental runs of 1%% each "
            "one after another in the same Spark JVM (how the cost of a run changes as the JVM "
            "warms up), then every model compared with a full refresh."
        ),
    )
    add_target(bench)
    bench.add_argument(
        "--events", type=int, default=1_000_000, help="events in the log (default 1000000)"
    )
    bench.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    bench.add_argument(
        "--schema",
        default="kappa_shop_bench",
        help="schema to build in, dropped first; raw tables go to <schema>_raw "
        "(default kappa_shop_bench)",
    )
    bench.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the log, landing zone and results go (default: data/bench); a log "
        "generated earlier with the same settings is reused",
    )
    bench.add_argument(
        "--successive",
        type=int,
        default=0,
        metavar="N",
        help="time N incremental runs of 1%% each, one after another in one JVM, after a "
        "full refresh of the rest of the on-time log, instead of the standard steps "
        "(results: bench-successive-<events>.md)",
    )
    bench.add_argument(
        "--select",
        nargs="+",
        metavar="MODEL",
        default=None,
        help="benchmark these models only, in dbt's selection syntax (write +model to build "
        "what it is built from too); sessions, orders_daily, page_views and their parents "
        "are always built, for the steps that compare them (default: every model)",
    )
    bench.add_argument(
        "--targets",
        type=lambda text: [name.strip() for name in text.split(",") if name.strip()],
        default=None,
        metavar="T1,T2,...",
        help="instead: the standard steps on each of these embedded targets, one after the "
        "other, each in a process of its own on the same log and in a schema of its own "
        "(<schema>_<target>), then every target's figures side by side in one table, such as "
        "--targets local,local_delta,local_iceberg for parquet, Delta Lake and Iceberg "
        "(results: bench-formats-<events>.md, each target's beside it)",
    )
    bench.add_argument(
        "--live",
        action="store_true",
        help="instead: the live service's freshness under load: --events of history built, "
        "then a continuing log delivered at --rate events/s for --minutes while `kappa-shop "
        "live` runs (docs/live.md); completion latency, cycles, throughput, CPU, memory, and "
        "every model compared with a full refresh (results: bench-live-<rate>-<minutes>.md)",
    )
    bench.add_argument(
        "--rate", type=float, default=1000.0, help="with --live: events per second (default 1000)"
    )
    bench.add_argument(
        "--minutes", type=float, default=30.0, help="with --live: minutes of load (default 30)"
    )
    bench.add_argument(
        "--every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="with --live: the service's cycle interval (default 5)",
    )
    bench.add_argument(
        "--kills",
        type=int,
        default=0,
        metavar="K",
        help="with --live: kill the service with SIGKILL at K random moments of the load, "
        "starting it again at once (default 0)",
    )
    bench.add_argument(
        "--kafka",
        action="store_true",
        help="with --live: produce the log to the project's Kafka broker (`kappa-shop kafka "
        "up`) instead of landing files, and stop and start the broker once during the load",
    )
    bench.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    from kappa_shop.bench.report import format_report, format_successive, write_results
    from kappa_shop.bench.runner import run_bench, run_successive
    from kappa_shop.runtime.warehouse import check_schema_name

    if arguments.targets is not None:
        return _run_targets(arguments)
    project = open_project(arguments)
    check_schema_name(arguments.schema, project.target_name)
    project = project.elsewhere(arguments.schema, f"{arguments.schema}_raw")
    work_dir = (arguments.work_dir or project.root / "data" / "bench").resolve()
    if arguments.live:
        from kappa_shop.bench.live import run_live_bench, write_live_results

        work_dir.mkdir(parents=True, exist_ok=True)
        live = run_live_bench(
            project, arguments.events, arguments.rate, arguments.minutes, work_dir,
            every=arguments.every, seed=arguments.seed, kills=arguments.kills,
            kafka=arguments.kafka,
        )  # fmt: skip
        print(live.markdown())
        for path in write_live_results(live, work_dir):
            print(f"Wrote {path}")
        if live.failed:
            print(f"kappa-shop bench --live: {'; '.join(live.problems)}", file=sys.stderr)
            return 1
        return 0
    if arguments.successive:
        report = run_successive(
            project,
            arguments.events,
            work_dir,
            arguments.successive,
            seed=arguments.seed,
            select=arguments.select,
        )
        print(format_successive(report))
    else:
        report = run_bench(
            project, arguments.events, work_dir, seed=arguments.seed, select=arguments.select
        )
        print(format_report(report))
    for path in write_results(report, work_dir):
        print(f"Wrote {path}")
    return exit_status(report)


def _run_targets(arguments: argparse.Namespace) -> int:
    """`bench --targets`: each target's standard steps, then one table of them all."""
    from kappa_shop.bench.formats import check_targets, run_formats, write_formats
    from kappa_shop.runtime.warehouse import check_schema_name

    if arguments.live or arguments.successive or arguments.target:
        raise KappaShopError(
            "--targets runs the standard steps: not with --live, --successive or --target"
        )
    project = open_project(arguments)
    check_targets(project.profiles_dir, arguments.targets)
    for target in arguments.targets:
        check_schema_name(f"{arguments.schema}_{target}", target)
    work_dir = (arguments.work_dir or project.root / "data" / "bench").resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    report = run_formats(
        project.root, arguments.targets, arguments.events, work_dir,
        seed=arguments.seed, schema=arguments.schema, select=arguments.select,
    )  # fmt: skip
    print(report.markdown())
    print(f"Wrote {write_formats(report, work_dir)}")
    if report.failed:
        print(
            f"kappa-shop bench: {len(report.failed)} equality check(s) found a difference: "
            + "; ".join(report.failed),
            file=sys.stderr,
        )
        return 1
    return 0


def exit_status(report: Any) -> int:
    """1 when an equality check of the benchmark found a difference (a figure measured on
    wrong tables is no figure), with one line naming the checks and what each found; else
    0."""
    failed = report.failed_checks()
    if not failed:
        return 0
    print(
        f"kappa-shop bench: {len(failed)} equality check(s) found a difference: "
        + "; ".join(f"{name}: {report.checks[name]}" for name in failed),
        file=sys.stderr,
    )
    return 1
