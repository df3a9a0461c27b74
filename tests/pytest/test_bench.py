"""`kappa-shop bench` at a small scale, run in this process (its warm Spark, in the suite's
project copy; only the ingestion alone starts a JVM of its own, as it does for a user): every
step runs and is measured, the log splits into a base and two 1% steps (the second with late
events), and both baselines compute the same tables as the project (the checks the benchmark
itself makes).

`--successive` (incremental runs one after another in one JVM) likewise, in a schema of its
own on the same log.

Both on a selection of the models (`--select`): the key model orders_current and what the
benchmark always builds (sessions, orders_daily, page_views), each with everything it is built
from: 13 of the 35 models, batches (staging), days and keys (the benchmark's code is the same
whatever it selects; every path of the contract, a key model on a key model included, is
test_verify's).

The figures at a real scale are a benchmark's business (`make bench`, docs/benchmarks.md),
not a test's: here only that they exist and add up."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO_ROOT, copy_project, kappa_shop_in

from kappa_shop.bench.plan import bench_log_config, plan_batches, plan_successive
from kappa_shop.cli import main
from kappa_shop.errors import KappaShopError
from kappa_shop.log.config import MAX_FIRST_OFFSET
from kappa_shop.log.generator import generate

EVENTS = 10_000
SELECT = ["+orders_current"]
# each day model with its lookback baseline (generated from the model by the benchmark)
LOOKBACK = {
    "orders_daily": "bench_orders_daily_lookback",
    "page_views": "bench_page_views_lookback",
    "sessions": "bench_sessions_lookback",
}
STEPS = [
    "generate",
    "ingest base",
    "ingest base alone",
    "dbt parse",
    "full refresh",
    "full refresh as plain dbt tables",
    "full refresh again, warm",
    "full refresh: insert_overwrite baselines",
    "ingest plus_1pct",
    "incremental +1%",
    "incremental +1%: insert_overwrite baselines",
    "ingest plus_1pct_late",
    "incremental +1% late",
    "incremental +1% late: insert_overwrite baselines",
    "incremental, nothing new",
    "full refresh as plain dbt tables, after the late step",
    "backfill 30 days: exact_incremental",
    "backfill 30 days: dbt microbatch",
    "full refresh for sessions and orders_daily",
    "hand-written PySpark job",
    "ingest the fixed batch",
    "the fixed batch on the whole history",
    "full refresh as plain dbt tables, after the fixed batch",
    "ingest a tenth of the history",
    "full refresh of a tenth of the history",
    "ingest the fixed batch, a tenth",
    "the fixed batch on a tenth of the history",
    "full refresh as plain dbt tables, after the fixed batch on a tenth",
]
# the checks of every model against a full refresh of the same records, by the schema they
# check and the schema of the full refresh
EVERY_MODEL_CHECKS = {
    "every model equals a full refresh after the late step": (
        "kappa_shop_bench", "kappa_shop_bench_plain"
    ),
    "every model equals a full refresh after the fixed batch": (
        "kappa_shop_bench", "kappa_shop_bench_plain"
    ),
    "every model equals a full refresh after the fixed batch on a tenth": (
        "kappa_shop_bench_tenth", "kappa_shop_bench_tenth_plain"
    ),
}  # fmt: skip


def _temporary_views(spark: Any) -> set[str]:
    return {table.name for table in spark.catalog.listTables() if table.isTemporary}


def _bench_in_process(
    spark: Any, work: Path, *arguments: str, status: int = 0, before_checks: Any = None
) -> tuple[str, str]:
    """`kappa-shop bench ARGUMENTS` run in this process (the suite's Spark, its project copy
    the working directory), with dbt's log in `work`/dbt-logs (the bench's own runs, to count
    in), required to exit with `status`; what it printed on stdout and on stderr. With
    `before_checks`, that function is called with the schema checked before each check of
    every model. Put back afterwards: the schema it sets, and the session without the
    temporary view dbt-spark's incremental materialization leaves (the microbatch baseline's
    `__dbt_tmp`, which `show tables` would list in every schema)."""
    from kappa_shop.bench.recorder import Recorder

    printed, errors = io.StringIO(), io.StringIO()
    views_before = _temporary_views(spark)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DBT_LOG_PATH", str(work / "dbt-logs"))
        patch.setenv("KAPPA_SHOP_SCHEMA", "unused")  # (restored: bench sets its own)
        if before_checks is not None:
            check_every_model = Recorder.check_every_model

            def seeded(recorder: Any, point: str, suffix: str = "", raw_schema: str = "") -> None:
                before_checks(recorder.schema + suffix)
                check_every_model(recorder, point, suffix, raw_schema)

            patch.setattr(Recorder, "check_every_model", seeded)
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
            returned = main(["bench", "--events", str(EVENTS), "--work-dir", str(work / "out"),
                             "--select", *SELECT, *arguments])  # fmt: skip
    for view in _temporary_views(spark) - views_before:
        spark.catalog.dropTempView(view)
    assert returned == status, printed.getvalue()[-4000:] + errors.getvalue()[-2000:]
    return printed.getvalue(), errors.getvalue()


@pytest.fixture(scope="module")
def bench(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Any]:
    work = tmp_path_factory.mktemp("bench")
    stdout, _ = _bench_in_process(spark, work)
    report = json.loads((work / "out" / f"bench-{_events(work)}.json").read_text())
    return work, stdout, report


def _selected_models(work: Path) -> list[str]:
    """The models of SELECT and the benchmark's own (sessions, orders_daily, page_views), with
    every model each is built from, read from the manifest of the benchmark's dbt project (in
    its work directory): what the benchmark must build."""
    # (each destination of the benchmark's has a target path of its own: the same nodes)
    target = work / "out" / "project" / "target"
    manifest = json.loads(next(target.rglob("manifest.json")).read_text())
    nodes = {
        key: node for key, node in manifest["nodes"].items() if node["resource_type"] == "model"
    }
    names = [*(pattern.lstrip("+") for pattern in SELECT), *LOOKBACK]  # LOOKBACK: its own three
    wanted = [f"model.kappa_shop.{name}" for name in names]
    selected: set[str] = set()
    while wanted:
        key = wanted.pop()
        if key in nodes and key not in selected:
            selected.add(key)
            wanted.extend(nodes[key]["depends_on"]["nodes"])
    return sorted(nodes[key]["name"] for key in selected)


def _events(work):
    return next((work / "out").glob("bench-[0-9]*.json")).stem.removeprefix("bench-")


def test_every_step_is_measured_in_order(bench):
    _, stdout, report = bench
    assert [step["name"] for step in report["steps"]] == STEPS
    for step in report["steps"]:
        assert step["seconds"] > 0, step
        assert step["peak_rss_mib"] > 10, step  # a Python process at least
    # Spark's JVM is counted with the process that runs it
    dbt_peak = max(step["peak_rss_mib"] for step in report["steps"][1:])
    assert dbt_peak > 300
    assert "| incremental +1% / full refresh |" in stdout
    assert "| incremental with nothing new / full refresh (the fixed cost) |" in stdout


def test_every_step_has_its_cpu_time_and_the_jvm_steps_their_compiling(bench):
    _, stdout, report = bench
    cores = int(report["machine"]["cpus"])
    for step in report["steps"]:
        # no more CPU time than the machine's cores could give in the wall time, and most of
        # a step is CPU (Spark's JVM, or the generator, working; a process whose time went
        # uncounted, as the JVM of the ingestion alone once did, shows a fraction of it)
        assert (
            step["seconds"] * 0.2 <= step["cpu_seconds"] <= step["seconds"] * cores * 1.05 + 0.5
        ), step
        assert 0 < step["machine_busy"] <= 1, step
        if step["name"] in ("generate", "ingest base alone"):  # processes of their own
            assert step["jit_seconds"] is None, step
        else:
            assert step["jit_seconds"] >= 0, step
    # a full refresh plans and generates code for every model: the JIT compiles some of it
    full = next(step for step in report["steps"] if step["name"] == "full refresh")
    assert full["jit_seconds"] > 0, full
    assert "| step | wall time (s) | CPU time (s) | cores busy | JIT compiling (s) |" in stdout


def test_ingestion_alone_is_measured_in_a_process_with_a_small_driver(bench):
    _, _, report = bench
    alone = next(step for step in report["steps"] if step["name"] == "ingest base alone")
    # the same records as the base (the step fails otherwise), in a process of its own
    assert alone["detail"].startswith(f"{report['records']['base']:,} records, in a process")
    # Spark's JVM was sampled, and it kept to its 1 GiB heap (plus the JVM's own memory)
    assert 300 < alone["peak_rss_mib"] < 2500, alone


def test_the_selected_models_and_no_other_are_benchmarked(bench):
    work, stdout, report = bench
    expected = _selected_models(work)
    assert report["selection"] == [*SELECT, "+orders_daily", "+page_views", "+sessions"]
    heading = f"models: {' '.join(report['selection'])})"
    assert any(
        line.startswith("Benchmark at") and line.endswith(heading) for line in stdout.splitlines()
    )
    for step in report["steps"]:
        if step["models"] and "baselines" not in step["name"]:
            assert sorted(step["models"]) == expected, step["name"]
    # the selection holds each mode: batches (staging), days, keys
    assert {"stg_orders__order_events", "sessions", "orders_current"} <= set(expected)
    assert "users_current" not in expected and len(expected) == 13


def test_the_baselines_compute_the_same_tables(bench):
    _, _, report = bench
    assert set(report["checks"]) == {
        "plain dbt tables equal the contract's full refresh",
        *EVERY_MODEL_CHECKS,
        "microbatch equals orders_daily",
        *(f"{baseline} equals {name} before late data" for name, baseline in LOOKBACK.items()),
        "hand-written sessions equal dbt's",
        "hand-written orders_daily equals dbt's",
    }
    for name, result in report["checks"].items():
        assert result.startswith("equal (") and not result.startswith("equal (0 "), name
    # the plain tables: every model of the project's full refresh, compared one by one
    models = next(step for step in report["steps"] if step["name"] == "full refresh")["models"]
    assert report["checks"]["plain dbt tables equal the contract's full refresh"].startswith(
        f"equal ({len(models)} models, "
    )
    # the hand-written tables: one model each, every column of dbt's (sessions: 16)
    for name in ("hand-written sessions equal dbt's", "hand-written orders_daily equals dbt's"):
        assert report["checks"][name].startswith("equal (1 model, "), name


def test_every_model_equals_a_full_refresh_after_the_late_step_and_each_fixed_batch(bench, spark):
    _, stdout, report = bench
    models = next(step for step in report["steps"] if step["name"] == "full refresh")["models"]
    steps = {step["name"] for step in report["steps"]}
    for check, (_, reference) in EVERY_MODEL_CHECKS.items():
        # every model of the project compared, all equal, the count in the report's table
        assert report["compared"][check] == sorted(models), check
        result = report["checks"][check]
        assert result.startswith(f"equal ({len(models)} models, "), (check, result)
        assert f"| {check} | {result} |" in stdout
        # the full refresh compared against, a step of its own, holds every model
        point = check.removeprefix("every model equals a full refresh ")
        assert f"full refresh as plain dbt tables, {point}" in steps
        tables = {row.tableName for row in spark.sql(f"show tables in {reference}").collect()}
        assert set(models) <= tables, (reference, set(models) - tables)


def test_a_check_finding_a_difference_names_the_models_and_fails_the_bench(bench, spark, capsys):
    # the bench's check of every model on its own tables against copies of them: one copy
    # equal, one less a row (a day of orders_daily), one with a value changed (a session's
    # event count); then the command's exit status for each
    from pyspark.sql import functions as F

    from kappa_shop.bench.checks import check_models
    from kappa_shop.bench.report import BenchReport
    from kappa_shop.commands.bench import exit_status
    from kappa_shop.runtime.warehouse import SessionWarehouse

    warehouse = SessionWarehouse(spark)
    ours, copies = "kappa_shop_bench", "bench_checks_copies"
    # (their meta.grain)
    grains = {"orders_daily": ["order_date"], "page_views": ["page_view_id"],
              "sessions": ["session_id"]}  # fmt: skip

    def copy(model: str, rows: Any) -> None:
        spark.sql(f"drop table if exists {copies}.{model}")
        rows.write.format("parquet").saveAsTable(f"{copies}.{model}")

    spark.sql(f"create schema {copies}")
    try:
        for model in grains:
            copy(model, spark.table(f"{ours}.{model}"))
        report = BenchReport(events=EVENTS, records={}, machine={})
        report.checks["copies"] = check_models(warehouse, grains, ours, copies)
        assert report.checks["copies"].startswith("equal (3 models, ")
        assert exit_status(report) == 0 and capsys.readouterr().err == ""

        orders_daily, sessions = (
            spark.table(f"{ours}.orders_daily"),
            spark.table(f"{ours}.sessions"),
        )
        first_day = orders_daily.agg(F.min("order_date")).first()[0]
        copy("orders_daily", orders_daily.where(F.col("order_date") != first_day))
        first_session = sessions.agg(F.min("session_id")).first()[0]
        one_more = F.when(F.col("session_id") == first_session, F.col("event_count") + 1)
        copy(
            "sessions", sessions.withColumn("event_count", one_more.otherwise(F.col("event_count")))
        )
        report.checks["seeded"] = check_models(warehouse, grains, ours, copies)
    finally:
        spark.sql(f"drop schema {copies} cascade")
    assert report.checks["seeded"] == (
        "DIFFERENT: 2 of 3 models differ: "
        f"orders_daily (1 rows only in {ours}, 0 only in {copies}, 0 with other values); "
        f"sessions (0 rows only in {ours}, 0 only in {copies}, 1 with other values)"
    )
    assert exit_status(report) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"kappa-shop bench: 1 equality check(s) found a difference: seeded: "
        f"{report.checks['seeded']}"
    ]


def test_the_usual_alternative_is_measured_beside_ours(bench):
    work, stdout, report = bench
    steps = {step["name"]: step for step in report["steps"]}
    lookback = LOOKBACK
    for name in ("full refresh", "incremental +1%", "incremental +1% late"):
        # the baselines ran alone, after the project's models ran without them
        assert set(steps[f"{name}: insert_overwrite baselines"]["models"]) == set(lookback.values())
        assert not set(steps[name]["models"]) & set(lookback.values())
    assert set(report["differences"]) == set(lookback)
    for name in lookback:
        ours, theirs = (report["differences"][name][key] for key in ("exact_incremental",
                                                                      "lookback"))  # fmt: skip
        assert ours[:2] == [0, 0] and ours[2] > 0, (name, ours)  # ours: a full refresh's rows
        # the lookback's gap: this log holds back an order_placed and a page_view of
        # 2024-03-25 to the late step, five days before the last day (03-30), where a 3-day
        # lookback from it (03-27 on) does not reach: each baseline lacks a row of the full
        # refresh (orders_daily's count of that day, page_views' view, sessions' session)
        assert theirs[1] >= 1 and theirs[0] <= theirs[2], (name, theirs)
    table = (work / "out" / f"bench-{report['events']}.md").read_text()
    for name in lookback:
        assert f"| {name} | exact_incremental |" in table
        assert f"| {name} | insert_overwrite, 3-day lookback |" in table
    assert "| full refresh again, warm / the same models as plain dbt tables |" in stdout


def test_the_steps_are_one_percent_each_and_the_second_is_partly_late(bench, tmp_path):
    _, _, report = bench
    records = report["records"]
    total = records["base"] + records["plus_1pct"] + records["plus_1pct_late"]
    assert 0.01 <= records["plus_1pct"] / total < 0.02
    assert 0.01 <= records["plus_1pct_late"] / total < 0.02
    # part of the late step is held back from the six days before it (about a tenth at 1M
    # events; less at this scale, where the simulation's last quiet hours are a larger share)
    assert records["held_back_late"] > 0
    assert 0.01 < records["held_back_late"] / records["plus_1pct_late"] < 0.3
    # and the split is the one plan_batches makes of the generated log (independently here)
    log = tmp_path / "log"
    manifest = generate(bench_log_config(EVENTS, 7), log, progress=lambda _: None).manifest
    plan = plan_batches(manifest)
    assert plan["plus_1pct_late"][-1] == len(manifest["batches"])  # the stragglers last
    assert sorted(plan["base"] + plan["plus_1pct"] + plan["plus_1pct_late"]) == list(
        range(1, len(manifest["batches"]) + 1)
    )


def test_one_fixed_batch_is_applied_to_the_history_and_to_a_tenth_of_it(bench, spark):
    work, stdout, report = bench
    records = report["records"]
    total = records["base"] + records["plus_1pct"] + records["plus_1pct_late"]
    assert 0.08 < records["tenth_history"] / total < 0.12
    assert 950 <= records["fixed_batch"] < 1_100  # about 1,000 events (the least), redeliveries
    # the same records, past every offset of both histories, staged in both schemas, and in
    # the full refreshes each was checked against after the batch: each selected stream's
    # records of the batch, as the generator's manifest counts them
    batch = json.loads((work / "out" / f"batch-{EVENTS}-7" / "manifest.json").read_text())
    by_stream = {stream: counts["records"] for stream, counts in batch["by_topic"].items()}
    assert sum(by_stream.values()) == records["fixed_batch"]
    streams = yaml.safe_load((REPO_ROOT / "dbt_project.yml").read_text())["vars"]["log_streams"]
    selected = set(_selected_models(work))
    staged_streams = {
        name: stream for name, stream in streams.items() if stream["deliveries_model"] in selected
    }
    assert len(staged_streams) >= 3, staged_streams  # web events, orders, users at least
    for schema in ("kappa_shop_bench", "kappa_shop_bench_tenth", "kappa_shop_bench_plain",
                   "kappa_shop_bench_tenth_plain"):  # fmt: skip
        for name, stream in staged_streams.items():
            staged = spark.sql(
                f"select count(*) from {schema}.{stream['deliveries_model']} "
                f"where log_offset >= {MAX_FIRST_OFFSET}"
            ).first()[0]
            assert staged == by_stream[name], (schema, name)
    steps = {step["name"]: step for step in report["steps"]}
    for name in (
        "the fixed batch on the whole history",
        "the fixed batch on a tenth of the history",
    ):
        assert steps[name]["detail"].startswith(f"{records['fixed_batch']:,} records, ")
    assert "| the fixed batch: on the whole history / on a tenth of it |" in stdout


def test_results_are_written_with_a_chart(bench):
    work, _, report = bench
    out = work / "out"
    stem = f"bench-{report['events']}"
    assert (out / f"{stem}.md").read_text().startswith("Benchmark at")
    svg = (out / f"{stem}.svg").read_text()
    assert svg.count("<rect ") == 10
    assert "hand-written PySpark job" in svg


def test_each_dbt_run_is_profiled_model_by_model(bench):
    work, stdout, report = bench
    profiled = {step["name"]: step for step in report["steps"] if step["models"]}
    assert list(profiled) == [
        "full refresh",
        "full refresh as plain dbt tables",
        "full refresh again, warm",
        "full refresh: insert_overwrite baselines",
        "incremental +1%",
        "incremental +1%: insert_overwrite baselines",
        "incremental +1% late",
        "incremental +1% late: insert_overwrite baselines",
        "incremental, nothing new",
        "the fixed batch on the whole history",
        "full refresh of a tenth of the history",
        "the fixed batch on a tenth of the history",
    ]
    profiled = {name: step for name, step in profiled.items() if "baselines" not in name}
    models = set(profiled["full refresh"]["models"])
    assert {"stg_web__events", "sessions", "orders_daily", "orders_current"} <= models
    assert "bench_orders_daily_microbatch" not in models  # the baseline is not the project's
    for step in profiled.values():
        assert set(step["models"]) == models  # every model ran in every run
        # slowest first; a model's own time fits inside the run that ran it
        assert list(step["models"].values()) == sorted(step["models"].values(), reverse=True)
        assert 0 < max(step["models"].values()) <= step["seconds"]
    assert "Slowest models per dbt run" in stdout
    assert "| all models (sum) |" in (work / "out" / f"bench-{report['events']}.md").read_text()


def test_each_dbt_run_reads_the_ledger_once(bench):
    """The contract's bookkeeping (run_state): a run reads its schema's batch ledger in one
    query, not several per model, and keeps it current as models commit."""
    work, _, _ = bench
    log = (work / "dbt-logs" / "dbt.log").read_text()
    runs = log.count("START hook: kappa_shop.on-run-start.0 ")
    # two full refreshes, three incremental runs, three of the insert_overwrite baselines, two
    # backfills, the floor's build, the fixed batch's; three of plain dbt tables in a schema
    # of their own (the floor, the full refreshes after the late step and the fixed batch); a
    # full refresh and the fixed batch's run on a tenth of the history, and its plain tables
    assert runs == 18
    ledger = (
        r"from kappa_shop_bench{}\.kappa_batch_ledger\s+\) as kappa_ledger_coverage\s+"
        r"(--[^\n]*\s+)?where not covered\s+group by model_name"
    )
    assert len(re.findall(ledger.format(""), log)) == 12
    assert len(re.findall(ledger.format("_plain"), log)) == 3
    assert len(re.findall(ledger.format("_tenth"), log)) == 2
    assert len(re.findall(ledger.format("_tenth_plain"), log)) == 1


def test_the_formats_table_sets_each_targets_figures_side_by_side(bench):
    """`bench --targets`' table, built from this benchmark's own results as each target's
    process writes them (read here as two targets' results): each step's seconds from its
    target's report (an incremental step's share of the warm full refresh beside them), the
    ratio to the first target, the fixed batch's proportionality and the checks."""
    from kappa_shop.bench.formats import FormatsReport, load_report

    work, _, report = bench
    loaded = load_report(work / "out" / f"bench-{report['events']}.json")
    table = FormatsReport({"local": loaded, "local_delta": loaded})
    lines = table.markdown().splitlines()
    assert "| step | local (parquet) | local_delta (Delta) | local_delta / local |" in lines
    plus, warm = loaded.seconds("incremental +1%"), loaded.seconds("full refresh again, warm")
    cell = f"{plus:,.1f} s ({plus / warm:.1%})"
    assert f"| incremental +1% | {cell} | {cell} | 1.00x |" in lines
    steps = {item["name"]: item["seconds"] for item in report["steps"]}
    proportional = (
        steps["the fixed batch on the whole history"]
        / steps["the fixed batch on a tenth of the history"]
    )
    assert f"| the fixed batch: on the whole history / on a tenth | {proportional:.2f}x " in (
        "\n".join(lines)
    )
    [checks] = [line for line in lines if line.startswith("| equality checks")]
    assert checks.count(f"all {len(report['checks'])} equal") == 2, checks
    assert table.failed == []


def test_bench_targets_are_checked_before_anything_runs(tmp_path):
    from kappa_shop.bench.formats import check_targets

    check_targets(REPO_ROOT, ["local", "local_delta", "local_iceberg"])  # no refusal
    for targets, refusal in (
        (["local", "cluster"], "--targets: 'cluster' is not an embedded-Spark target"),
        (["local", "locale"], "unknown target 'locale'"),
        (["local", "local"], "--targets takes two or more different targets"),
        (["local"], "--targets takes two or more different targets"),
    ):
        with pytest.raises(KappaShopError, match=re.escape(refusal)):
            check_targets(REPO_ROOT, targets)
    root = copy_project(tmp_path / "kappa_shop")
    result = kappa_shop_in(root, "bench", "--targets", "local,local_delta", "--successive", "2")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--targets runs the standard steps: not with --live, --successive or --target" in (
        result.stderr
    )


def test_a_bench_too_small_to_split_is_refused_in_one_line(tmp_path):
    root = copy_project(tmp_path / "kappa_shop")
    result = kappa_shop_in(root, "bench", "--events", "500", "--work-dir", str(tmp_path / "o"))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "--events must be at least 10000" in result.stderr


def test_the_baselines_are_the_benchmarks_generated_from_the_models_own_sql(tmp_path):
    # the project knows nothing of the benchmark: no bench model, var or macro in it
    from kappa_shop.bench.baselines import bench_project, lookback_sql, microbatch_sql
    from kappa_shop.runtime.dbt import DbtProject, Destination

    assert "bench" not in (REPO_ROOT / "dbt_project.yml").read_text()
    assert not [path for path in (REPO_ROOT / "models").rglob("*") if "bench" in path.name]
    # a change to a model is its baseline's: made from a copy whose sessions count differently
    root = copy_project(tmp_path / "kappa_shop")
    sessions = root / "models" / "marts" / "web" / "sessions.sql"
    sql = sessions.read_text()
    assert sql.count("count(*) as event_count") == 1
    sessions.write_text(sql.replace("count(*) as event_count", "count(*) + 1 as event_count"))
    lookback = lookback_sql(root, "sessions")
    assert "count(*) + 1 as event_count" in lookback and "kappa." not in lookback
    # its input filters become the lookback: on the day parent's partitions, or on the day of
    # the time column
    start = (
        "(select date_sub(max(built.session_date), {{ var('kappa_bench_lookback_days', 3) }}) "
        "from {{ this }} as built)"
    )
    assert f"{{% if is_incremental() %}}(activity_date >= {start}){{% else %}}true" in lookback
    assert f"and {{% if is_incremental() %}}(to_date(occurred_at) >= {start})" in lookback
    assert "incremental_strategy='insert_overwrite'" in lookback
    microbatch = microbatch_sql(root, "orders_daily")
    assert "incremental_strategy='microbatch'" in microbatch and "where true" in microbatch
    # a model whose input filter is gone cannot make a baseline: one line says so
    sessions.write_text(sql.replace("{{ kappa.in_recomputed_days(", "{{ other_filter("))
    with pytest.raises(KappaShopError, match=r"sessions.sql no longer .* kappa.in_recomputed_days"):
        lookback_sql(root, "sessions")
    sessions.write_text(sql)

    # the benchmark's project: dbt parses it, with the baselines, as the project's models
    destination = Destination("local", "bench_parse", "bench_parse_raw")
    made = bench_project(DbtProject(root, profiles_dir=root, destination=destination), tmp_path)
    assert made.root == (tmp_path / "project").resolve()
    assert "kappa_bench_plain_tables" in (made.root / "dbt_project.yml").read_text()
    baselines = {"kappa_bench_baselines": True}
    made.invoke("parse", "--quiet", dbt_vars=baselines)
    nodes = json.loads((made.target_path(baselines) / "manifest.json").read_text())["nodes"]
    names = {node["name"] for node in nodes.values() if node["resource_type"] == "model"}
    assert set(LOOKBACK.values()) | {"bench_orders_daily_microbatch", "sessions"} <= names


SUCCESSIVE_STEPS = [
    "generate",
    "ingest base",
    "dbt parse",
    "full refresh",
    "ingest run 1",
    "incremental run 1",
    "ingest run 2",
    "incremental run 2",
    "incremental, nothing new",
    "full refresh as plain dbt tables, after the last run",
]


def test_successive_runs_are_measured_one_after_another_in_one_jvm_and_checked(bench, spark):
    work, _, report = bench
    # a day of orders_daily's incremental table deleted before the check (as an emptied
    # partition kept would): the check finds that and nothing else, and the command exits 1
    schema = "kappa_shop_successive"

    def delete_a_day(checked: str) -> None:
        assert checked == schema
        first_day = spark.sql(f"select min(order_date) from {schema}.orders_daily").first()[0]
        spark.sql(f"alter table {schema}.orders_daily drop partition (order_date = '{first_day}')")

    stdout, stderr = _bench_in_process(
        spark, work, "--successive", "2", "--schema", schema, status=1,
        before_checks=delete_a_day,
    )  # fmt: skip
    # the log of the standard run is reused, not generated again
    assert f"Reusing the log in {work / 'out'}" in stdout
    successive = json.loads((work / "out" / f"bench-successive-{_events(work)}.json").read_text())
    assert [step["name"] for step in successive["steps"]] == SUCCESSIVE_STEPS
    for step in successive["steps"][1:]:  # all in this process's JVM
        assert step["seconds"] > 0 and step["jit_seconds"] is not None, step
    runs = [step for step in successive["steps"] if step["name"].startswith("incremental")]
    models = set(runs[0]["models"])
    assert {"stg_web__events", "sessions", "orders_daily", "orders_current"} <= models
    assert all(set(step["models"]) == models for step in runs)  # every model in every run
    # the same log: its on-time records split into a base and two runs of about 1% each
    records = successive["records"]
    assert set(records) == {"base", "run 1", "run 2"}
    total = report["records"]["base"] + report["records"]["plus_1pct"]
    total += report["records"]["plus_1pct_late"]
    for run in ("run 1", "run 2"):
        assert 0.01 <= records[run] / total < 0.02, records
    # every on-time batch ingested once: all the log but the stragglers (its held-back events)
    ingested = records["base"] + records["run 1"] + records["run 2"]
    assert 0.95 * total < ingested < total
    table = (work / "out" / f"bench-successive-{_events(work)}.md").read_text()
    assert "| run 1 |" in table and "| run 2 |" in table
    assert "| incremental run 2 |" in stdout
    # every model compared with a full refresh of the same records: the deleted day only
    check = "every model equals a full refresh after the last run"
    assert successive["compared"] == {check: sorted(models)}
    result = successive["checks"][check]
    assert result == (
        f"DIFFERENT: 1 of {len(models)} models differ: orders_daily (0 rows only in {schema}, "
        f"1 only in {schema}_plain, 0 with other values)"
    )
    assert f"| {check} | {result} |" in table
    assert stderr.splitlines() == [
        f"kappa-shop bench: 1 equality check(s) found a difference: {check}: {result}"
    ]
    # the standard run's results are left as they were
    assert json.loads((work / "out" / f"bench-{_events(work)}.json").read_text()) == report


def test_successive_runs_take_the_last_on_time_batches_in_arrival_order(tmp_path):
    manifest = generate(bench_log_config(EVENTS, 7), tmp_path, progress=lambda _: None).manifest
    plan = plan_successive(manifest, 3)
    assert list(plan) == ["base", "run 1", "run 2", "run 3"]
    batches = len(manifest["batches"])
    # every on-time batch once, in arrival order; the stragglers (the last batch) left out
    assert [number for group in plan.values() for number in group] == list(range(1, batches))
    records = {entry["batch"]: entry["records"] for entry in manifest["batches"]}
    total = sum(records.values())
    for run in ("run 1", "run 2", "run 3"):
        assert 0.01 <= sum(records[b] for b in plan[run]) / total < 0.02, plan[run]
    with pytest.raises(KappaShopError, match="too small to split into a base and 200 1% steps"):
        plan_successive(manifest, 200)
