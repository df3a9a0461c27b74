"""A brand-new dbt project adopts the package exactly as its README says ("Adopt it in your
project": every code block there that names a file is written to it, the profile and the raw
tables' DDL included), builds a shuffled log with redeliveries batch by batch (a receipt
landing before a lower one on the way, and one written before half of its batch's rows), and
equals its full refresh; and each mistake a
newcomer makes stops `dbt compile` or `dbt run` in one line naming the fix."""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import shutil
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from contract_harness import PACKAGE_ROOT, Project, differences, package_copy, reset, rows, spark  # noqa: F401 (a fixture)

pytestmark = pytest.mark.spark

MODELS = ("stg_orders", "orders_daily", "customers_current")


def readme_section() -> str:
    """The README's adoption section."""
    readme = (PACKAGE_ROOT / "README.md").read_text()
    return readme.split("## Adopt it in your project", 1)[1].split("\n## ", 1)[0]


def readme_files() -> dict[str, str]:
    """The files of the README's adoption section: each fenced block whose first line names a
    path (`# path` or `-- path`), by that path. (The others, a shell line and a query, are
    what the test does by hand.)"""
    files = {}
    for block in re.findall(r"```\w*\n(.*?)```", readme_section(), flags=re.DOTALL):
        match = re.fullmatch(r"(?:#|--) (\S+\.(?:yml|sql))", block.splitlines()[0])
        if match:
            files[match.group(1)] = block
    return files


def statements(script: str) -> list[str]:
    """The statements of a SQL script (`;`-separated), without its comment lines."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [statement.strip() for statement in "\n".join(lines).split(";") if statement.strip()]


def generated_orders(seed: int) -> list[tuple[str, str, float, datetime, int]]:
    """Orders of four customers over three days, each with the arrival group it is delivered
    in; a fifth of them arrive in a later group than their day's (late, some by days), and
    about one in six is delivered again (the same record), in the same group or a later one."""
    chooser = random.Random(seed)
    start = datetime(2024, 3, 1)
    orders = []
    for number in range(60):
        placed_at = start + timedelta(minutes=chooser.randrange(3 * 24 * 60))
        day_group = (placed_at - start).days  # 0, 1, 2
        late = chooser.random() < 0.2
        group = day_group + chooser.randrange(1, 3) if late else day_group
        order = (f"o{number:03d}", f"c{chooser.randrange(4)}", float(chooser.randrange(1, 100)))
        orders.append((*order, placed_at, group))
        if chooser.random() < 0.17:  # a redelivery
            orders.append((*order, placed_at, group + chooser.randrange(0, 2)))
    return orders


def new_project(directory: Path) -> Path:
    """A new dbt project in `directory`/my_shop, made of the README's adoption blocks (its
    profile included), with a copy of the package beside it (`local: ../kappa`)."""
    shutil.copytree(
        PACKAGE_ROOT, directory / "kappa", ignore=shutil.ignore_patterns("integration_tests")
    )
    project_dir = directory / "my_shop"
    for relative, text in readme_files().items():
        (project_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (project_dir / relative).write_text(text)
    return project_dir


def invoke(project_dir: Path, *arguments: str, schema: str, said: list | None = None) -> Any:
    """`dbt ARGUMENTS` in the project, into `schema`: dbt's outcome. With `said`, the lines
    the package logged (its run summary) are appended to it."""
    from dbt.cli.main import dbtRunner

    def keep(event: Any) -> None:
        if said is not None and event.info.name == "JinjaLogInfo":
            said.append(event.info.msg)

    os.environ["MY_SHOP_SCHEMA"] = schema
    return dbtRunner(callbacks=[keep]).invoke(
        [*arguments, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]
    )


def day_runs(days: set[str]) -> str:
    """Sorted days as the run summary names them: runs of consecutive days as first..last."""
    runs: list[list[date]] = []
    for day in sorted(date.fromisoformat(day) for day in days):
        if runs and (day - runs[-1][-1]).days == 1:
            runs[-1][-1] = day
        else:
            runs.append([day, day])
    return ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in runs)


def failure(outcome: Any) -> str:
    """What a failed dbt command said: its exception and its failed nodes' messages."""
    assert not outcome.success
    messages = [str(outcome.exception)] if outcome.exception is not None else []
    for result in getattr(outcome.result, "results", None) or []:
        if str(result.status) in ("error", "fail", "runtime error"):
            messages.append(str(result.message))
    return " | ".join(messages)


def test_a_new_project_builds_shuffled_batches_equal_to_its_full_refresh(
    package_copy: Project, tmp_path: Path
) -> None:
    # package_copy: this process's Spark (and dbt's use of it) is set up
    project_dir = new_project(tmp_path)
    files = ["profiles.yml", "ingestion/raw_tables.sql", "models/_sources.yml", "packages.yml"]
    files += ["dbt_project.yml", *(f"models/{model}.sql" for model in MODELS)]
    assert sorted(readme_files()) == sorted(files)

    said: list[str] = []

    def dbt(*arguments: str, schema: str) -> None:
        said.clear()
        outcome = invoke(project_dir, *arguments, schema=schema, said=said)
        assert outcome.success, f"dbt {' '.join(arguments)}: {outcome.exception or outcome.result}"

    # the project's ingestion: the README's tables, raw orders by ingestion batch, a receipt
    # after each batch's rows
    reset("shop_log", "my_shop", "my_shop_full")
    for statement in statements((project_dir / "ingestion" / "raw_tables.sql").read_text()):
        spark().sql(statement)
    orders = generated_orders(seed=5)
    assert len(orders) > len({order_id for order_id, *_ in orders})  # redeliveries
    groups = sorted({group for *_, group in orders})
    random.Random(7).shuffle(groups)
    waiting = 2  # batch 2's receipt lands after batch 3's
    hasty = 4  # batch 4's receipt is written before the second half of its rows
    checked_summaries: list[str] = []
    written: dict[int, int] = {}

    def receipt(batch: int, count: int | None = None) -> None:
        count = written[batch] if count is None else count
        spark().sql(f"insert into shop_log.ingestion_batches values ({batch}, {count})")

    def write(batch: int, deliveries: list[str]) -> None:
        spark().sql(
            f"insert into shop_log.orders partition (_ingestion_batch_id = {batch}) "
            f"values {', '.join(deliveries)}"
        )
        written[batch] = written.get(batch, 0) + len(deliveries)

    dbt("deps", "--quiet", schema="my_shop")
    # the README's profile leaves the partition overwrite mode at Spark's default, static (the
    # package sets dynamic where it writes); this process's session had it dynamic
    spark().conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    for batch, group in enumerate(groups, start=1):
        deliveries = [
            f"('{order_id}', '{customer}', {amount}, timestamp '{placed_at}')"
            for order_id, customer, amount, placed_at, arrival in orders
            if arrival == group
        ]
        if batch == hasty:
            # the receipt, with the batch's count, lands while half of its rows are written: the
            # run checks the count and stops, consuming nothing; the next, after the rest, takes it
            half = len(deliveries) // 2
            assert half > 0
            write(batch, deliveries[:half])
            receipt(batch, count=len(deliveries))
            before = rows("select count(*) from my_shop.stg_orders")
            refused = failure(invoke(project_dir, "run", "--quiet", schema="my_shop"))
            assert (
                f"kappa: the receipt of ingestion batch {hasty} in shop_log.ingestion_batches "
                f"(record_count) counts {len(deliveries)} rows, and shop_log.orders holds {half} "
                f"row(s) of batch {hasty}: the receipt was written before all of its batch's rows"
            ) in refused, refused
            assert rows("select count(*) from my_shop.stg_orders") == before
            write(batch, deliveries[half:])
        else:
            write(batch, deliveries)
            if batch == waiting:
                continue  # its receipt is late: ingestion still finishing
            receipt(batch)
        if batch == waiting + 1:
            refused = failure(invoke(project_dir, "run", "--quiet", schema="my_shop"))
            assert (
                "The ingestion receipts in shop_log.ingestion_batches have a gap: batch 2 is "
                "missing (receipts run from 1 to 3). Models consume batches in order and will not "
                "pass over a gap, so no model consumed a batch"
            ) in refused, refused
            assert rows("select distinct _ingestion_batch_id from my_shop.stg_orders") == [(1,)]
            receipt(waiting)
        dbt("run", "--quiet", schema="my_shop")
        # the run's summary names the days orders_daily recomputed: those of the orders first
        # delivered in its batches (the staging model drops redeliveries), runs of days joined
        first = batch - 1 if batch == waiting + 1 else batch
        new_days = {
            placed_at.date().isoformat()
            for order_id, _, _, placed_at, arrival in orders
            if groups.index(arrival) + 1 in range(first, batch + 1)
            and min(groups.index(a) + 1 for o, *_, a in orders if o == order_id) >= first
        }
        if batch > 1 and new_days:
            summary = (
                f"kappa: my_shop.orders_daily: ingestion batches {first}..{batch} recomputed "
                f"{len(new_days)} day(s), {day_runs(new_days)}:"
            )
            assert any(line.startswith(summary) for line in said), (summary, said)
            checked_summaries.append(summary)
    dbt("run", "--quiet", "--full-refresh", schema="my_shop_full")
    assert spark().conf.get("spark.sql.sources.partitionOverwriteMode").lower() == "dynamic"

    assert len(checked_summaries) >= 2, checked_summaries
    assert differences("my_shop", "my_shop_full", MODELS) == {}
    # and the full refresh is right: per day, the orders placed that day, whenever they came
    expected = {}
    for _, _, amount, placed_at, _ in {order[:4]: order for order in orders}.values():
        day = placed_at.date().isoformat()
        count, revenue = expected.get(day, (0, 0.0))
        expected[day] = (count + 1, revenue + amount)
    assert rows(
        "select cast(order_date as string), orders, revenue from my_shop_full.orders_daily"
    ) == [(day, count, revenue) for day, (count, revenue) in sorted(expected.items())]
    assert rows("select count(*), sum(orders) from my_shop_full.customers_current") == [(4, 60)]
    assert rows("select count(*), count(distinct order_id) from my_shop_full.stg_orders") == [
        (60, 60)
    ]


# A newcomer's mistakes, each a model written into the README's project (or a step of its
# setup left out), and the one line that must name it and its fix
MISTAKES = {
    "a day model without event_time": (
        "orders_by_day.sql",
        "{{ config(partition_by=['order_date']) }}\n"
        "select to_date(placed_at) as order_date, count(*) as orders from {{ ref('stg_orders') }}\n"
        "where {{ kappa.in_recomputed_days('placed_at') }} group by to_date(placed_at)\n",
        "orders_by_day: an exact_incremental model is partitioned either by _ingestion_batch_id "
        "first",
    ),
    "a key model without recompute_key": (
        "customer_totals.sql",
        "{{ config(partition_by=['customer_bucket']) }}\n"
        "select customer_id, count(*) as orders,\n"
        "    {{ kappa.key_bucket('customer_id') }} as customer_bucket\n"
        "from {{ ref('stg_orders') }} where {{ kappa.in_recomputed_buckets('customer_id') }}\n"
        "group by customer_id\n",
        "customer_totals: an exact_incremental model is partitioned either by _ingestion_batch_id "
        "first",
    ),
    "a day predicate in a key model": (
        "customer_orders.sql",
        "{{ config(partition_by=['customer_bucket'], recompute_key='customer_id') }}\n"
        "select customer_id, count(*) as orders,\n"
        "    {{ kappa.key_bucket('customer_id') }} as customer_bucket\n"
        "from {{ ref('stg_orders') }} where {{ kappa.in_recomputed_days('placed_at') }}\n"
        "group by customer_id\n",
        "customer_orders: kappa.in_recomputed_days() is for a model partitioned by the UTC day of "
        "its event_time (days mode), and this is a model partitioned by kappa.key_bucket() of its "
        "recompute_key (keys mode): filter its input with kappa.in_recomputed_buckets()",
    ),
    "a batch predicate in a day model": (
        "orders_per_day.sql",
        "{{ config(partition_by=['order_date'], event_time='placed_at') }}\n"
        "select to_date(placed_at) as order_date, count(*) as orders from {{ ref('stg_orders') }}\n"
        "where {{ kappa.in_new_batches('_ingestion_batch_id') }} group by to_date(placed_at)\n",
        "orders_per_day: kappa.in_new_batches() is for a model partitioned by _ingestion_batch_id "
        "first (batches mode), and this is a model partitioned by the UTC day of its event_time "
        "(days mode): filter its input with kappa.in_recomputed_days(), "
        "kappa.before_recomputed_days() or kappa.is_recomputed_day()",
    ),
}


# Mistakes found when the model first writes (its columns known only from Spark): a partition
# column that does not fit the mode; a merge asked of a parquet table
WRITE_MISTAKES = {
    "a day model partitioned by a timestamp": (
        "orders_by_hour.sql",
        "{{ config(partition_by=['order_day'], event_time='placed_at') }}\n"
        "select date_trunc('DAY', placed_at) as order_day, count(*) as orders\n"
        "from {{ ref('stg_orders') }} where {{ kappa.in_recomputed_days('placed_at') }}\n"
        "group by date_trunc('DAY', placed_at)\n",
        "orders_by_hour: a model partitioned by day needs its partition column order_day to be "
        "the UTC day of its event_time, a date: it is timestamp. Select it as to_date(placed_at) "
        "as order_day",
    ),
    "a key model bucketed by another hash": (
        "customer_counts.sql",
        "{{ config(partition_by=['customer_bucket'], recompute_key='customer_id') }}\n"
        "select customer_id, count(*) as orders, pmod(hash(customer_id), 16) as customer_bucket\n"
        "from {{ ref('stg_orders') }} where {{ kappa.in_recomputed_buckets('customer_id') }}\n"
        "group by customer_id\n",
        "customer_counts: a row has customer_bucket other than the bucket of its recompute_key "
        'customer_id: select {{ kappa.key_bucket("customer_id") }} as customer_bucket',
    ),
    "a day model of input without event time": (
        "orders_per_day.sql",
        "{{ config(partition_by=['order_date'], event_time='placed_at') }}\n"
        "select to_date(placed_at) as order_date, count(*) as orders from {{ ref('stg_orders') }}\n"
        "where {{ kappa.in_recomputed_days('placed_at') }} group by to_date(placed_at)\n",
        "orders_per_day: a row has no order_date (its input had no placed_at): a row of no day "
        "is never recomputed. Leave out or quarantine input without an event time before this "
        "model",
    ),
    "a key model merged on parquet": (
        "customer_merged.sql",
        "{{ config(partition_by=['customer_bucket'], recompute_key='customer_id',\n"
        "    incremental_strategy='merge', unique_key='customer_id') }}\n"
        "select customer_id, count(*) as orders,\n"
        "    {{ kappa.key_bucket('customer_id') }} as customer_bucket\n"
        "from {{ ref('stg_orders') }} where {{ kappa.in_recomputed_buckets('customer_id') }}\n"
        "group by customer_id\n",
        "kappa: customer_merged: incremental_strategy 'merge' needs file_format 'delta' or "
        "'iceberg' (a parquet table cannot merge): leave it out on parquet, or build the model on "
        "Delta or Iceberg",
    ),
    "a key model without its key": (
        "bucket_counts.sql",
        "{{ config(partition_by=['customer_bucket'], recompute_key='customer_id') }}\n"
        "select {{ kappa.key_bucket('customer_id') }} as customer_bucket, count(*) as orders\n"
        "from {{ ref('stg_orders') }} where {{ kappa.in_recomputed_buckets('customer_id') }}\n"
        "group by 1\n",
        "bucket_counts: a model partitioned by key bucket keeps its recompute_key customer_id as "
        "a column, and the model has no such column: select it",
    ),
}


def test_each_newcomer_mistake_stops_in_one_line_naming_the_fix(
    package_copy: Project, tmp_path: Path
) -> None:
    project_dir = new_project(tmp_path)
    schema = "my_shop_mistakes"
    reset("shop_log", schema)
    assert invoke(project_dir, "deps", "--quiet", schema=schema).success
    # a model of the wrong mode, or of none: refused by `dbt compile`, as by `dbt run`
    for mistake, (file_name, sql, message) in MISTAKES.items():
        model = project_dir / "models" / file_name
        model.write_text(sql)
        for command in ("compile", "run"):
            said = failure(invoke(project_dir, command, "--select", model.stem, schema=schema))
            assert message in said, (mistake, command, said)
        model.unlink()
    # a partition column that does not fit the mode: refused by the model's first write, which
    # writes nothing (the staging model built first, from one batch)
    log = spark()
    for statement in statements((project_dir / "ingestion" / "raw_tables.sql").read_text()):
        log.sql(statement)
    log.sql("insert into shop_log.orders values ('o1', 'c1', 10.0, timestamp'2024-03-01 10:00', 1)")
    log.sql("insert into shop_log.orders values ('o2', 'c1', 5.0, null, 1)")  # no event time
    log.sql("insert into shop_log.ingestion_batches values (1, 2)")
    assert invoke(project_dir, "run", "--select", "stg_orders", schema=schema).success
    for mistake, (file_name, sql, message) in WRITE_MISTAKES.items():
        model = project_dir / "models" / file_name
        model.write_text(sql)
        said = failure(invoke(project_dir, "run", "--select", model.stem, schema=schema))
        assert message in said, (mistake, said)
        assert not log.catalog.tableExists(f"{schema}.{model.stem}"), mistake
        model.unlink()
    reset("shop_log", schema)

    # the receipts table not created yet (its source declared)
    spark().sql("create schema shop_log")
    said = failure(invoke(project_dir, "run", "--select", "stg_orders", schema=schema))
    assert (
        "kappa: the ingestion receipts table shop_log.ingestion_batches (source "
        "shop_log.ingestion_batches, var kappa_receipts) does not exist: your ingestion creates it"
    ) in said, said
    # the var kappa_receipts left out: its default names a source nobody declared
    settings = project_dir / "dbt_project.yml"
    text = settings.read_text()
    settings.write_text(text.replace("  kappa_receipts: [shop_log, ingestion_batches]\n", ""))
    assert settings.read_text() != text
    said = failure(invoke(project_dir, "run", "--select", "stg_orders", schema=schema))
    assert (
        "kappa: the var kappa_receipts names the ingestion receipts source ingestion.batches (its "
        "default: the var is not set), which no sources YAML declares"
    ) in said, said

    # a session setting the package needs, missing from the profile: the run stops before any
    # model (the session restored after: it is this process's one)
    profile = project_dir / "profiles.yml"
    readme_profile = profile.read_text()
    wrong = {
        "spark.sql.session.timeZone: UTC": (
            "spark.sql.session.timeZone: Europe/Berlin",
            "kappa: the session has spark.sql.session.timeZone = Europe/Berlin, and the package "
            "needs UTC: put `spark.sql.session.timeZone: UTC` under server_side_parameters in the "
            "profile",
        ),
        'spark.sql.hive.metastorePartitionPruning: "false"': (
            'spark.sql.hive.metastorePartitionPruning: "true"',
            "kappa: the session has spark.sql.hive.metastorePartitionPruning = true, and the "
            'package needs false: put `spark.sql.hive.metastorePartitionPruning: "false"` under '
            "server_side_parameters in the profile",
        ),
    }
    try:
        for right, (setting, message) in wrong.items():
            assert right in readme_profile
            profile.write_text(readme_profile.replace(right, setting))
            said = failure(invoke(project_dir, "run", "--select", "stg_orders", schema=schema))
            assert message in said, said
            assert "nothing was run" in said
    finally:
        spark().conf.set("spark.sql.session.timeZone", "UTC")
        spark().conf.set("spark.sql.hive.metastorePartitionPruning", "false")


def test_the_scaffold_prints_the_readmes_tables_sources_and_staging_model(
    package_copy: Project, tmp_path: Path
) -> None:
    # the README's command, as a newcomer types it in the project (the package installed)
    project_dir = new_project(tmp_path)
    command = re.search(r"dbt run-operation kappa\.scaffold --args '(.*?)'", readme_section(), re.S)
    assert command, "the README shows no kappa.scaffold command"
    assert invoke(project_dir, "deps", "--quiet", schema="my_shop_scaffold").success
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        outcome = invoke(
            project_dir, "run-operation", "kappa.scaffold", "--args", command.group(1),
            schema="my_shop_scaffold",
        )  # fmt: skip
    assert outcome.success, outcome.exception
    files = readme_files()
    for path in ("ingestion/raw_tables.sql", "models/_sources.yml", "models/stg_orders.sql"):
        assert files[path].strip() in printed.getvalue(), (path, printed.getvalue())
