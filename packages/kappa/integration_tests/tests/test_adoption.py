"""A brand-new dbt project adopts the package exactly as its README says ("Adopt it in your
project": every code block there is written to the file its first line names), builds a
shuffled log batch by batch, and equals its full refresh."""

from __future__ import annotations

import os
import random
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from contract_harness import PACKAGE_ROOT, Project, differences, package_copy, reset, rows, spark  # noqa: F401 (a fixture)

pytestmark = pytest.mark.spark

PROFILE = """\
my_shop:
  target: local
  outputs:
    local:
      type: spark
      method: session
      host: localhost
      schema: "{{ env_var('MY_SHOP_SCHEMA') }}"
      threads: 2
      server_side_parameters:
        spark.sql.session.timeZone: UTC
        spark.sql.sources.partitionOverwriteMode: dynamic
        spark.sql.hive.metastorePartitionPruning: "false"
"""
MODELS = ("stg_orders", "orders_daily", "customers_current")


def readme_files() -> dict[str, str]:
    """The files of the README's adoption section: each fenced block, by the path its first
    line names (`# path` or `-- path`)."""
    readme = (PACKAGE_ROOT / "README.md").read_text()
    section = readme.split("## Adopt it in your project", 1)[1].split("\n## ", 1)[0]
    files = {}
    for block in re.findall(r"```\w*\n(.*?)```", section, flags=re.DOTALL):
        first_line = block.splitlines()[0]
        match = re.fullmatch(r"(?:#|--) (\S+\.(?:yml|sql))", first_line)
        assert match, f"a block of the adoption section names no file: {first_line!r}"
        files[match.group(1)] = block
    return files


def generated_orders(seed: int) -> list[tuple[str, str, float, datetime, int]]:
    """Orders of four customers over three days, each with the arrival group it is delivered
    in; a fifth of them arrive in a later group than their day's (late, some by days)."""
    chooser = random.Random(seed)
    start = datetime(2024, 3, 1)
    orders = []
    for number in range(60):
        placed_at = start + timedelta(minutes=chooser.randrange(3 * 24 * 60))
        day_group = (placed_at - start).days  # 0, 1, 2
        late = chooser.random() < 0.2
        group = day_group + chooser.randrange(1, 3) if late else day_group
        orders.append(
            (
                f"o{number:03d}",
                f"c{chooser.randrange(4)}",
                float(chooser.randrange(1, 100)),
                placed_at,
                group,
            )
        )
    return orders


def test_a_new_project_builds_shuffled_batches_equal_to_its_full_refresh(
    package_copy: Project, tmp_path: Path
) -> None:
    # package_copy: this process's Spark (and dbt's use of it) is set up
    shutil.copytree(
        PACKAGE_ROOT, tmp_path / "kappa", ignore=shutil.ignore_patterns("integration_tests")
    )
    project_dir = tmp_path / "my_shop"
    for relative, text in readme_files().items():
        (project_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (project_dir / relative).write_text(text)
    (project_dir / "profiles.yml").write_text(PROFILE)
    assert sorted(readme_files()) == sorted(
        ["models/_sources.yml", "packages.yml", "dbt_project.yml"]
        + [f"models/{model}.sql" for model in MODELS]
    )

    from dbt.cli.main import dbtRunner

    def dbt(*arguments: str, schema: str) -> None:
        os.environ["MY_SHOP_SCHEMA"] = schema
        outcome = dbtRunner().invoke(
            [*arguments, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]
        )
        assert outcome.success, f"dbt {' '.join(arguments)}: {outcome.exception or outcome.result}"

    # the project's ingestion: raw orders by ingestion batch, a receipt after each batch
    reset("shop_log", "my_shop", "my_shop_full")
    spark().sql("create schema shop_log")
    spark().sql(
        "create table shop_log.orders (order_id string, customer_id string, amount double,"
        " placed_at timestamp, _ingestion_batch_id bigint) using parquet"
        " partitioned by (_ingestion_batch_id)"
    )
    spark().sql("create table shop_log.ingestion_batches (ingestion_batch_id bigint) using parquet")
    orders = generated_orders(seed=5)
    groups = sorted({group for *_, group in orders})
    random.Random(7).shuffle(groups)

    dbt("deps", "--quiet", schema="my_shop")
    for batch, group in enumerate(groups, start=1):
        values = ", ".join(
            f"('{order_id}', '{customer}', {amount}, timestamp '{placed_at}')"
            for order_id, customer, amount, placed_at, arrival in orders
            if arrival == group
        )
        spark().sql(
            f"insert into shop_log.orders partition (_ingestion_batch_id = {batch}) values {values}"
        )
        spark().sql(f"insert into shop_log.ingestion_batches values ({batch})")
        dbt("run", "--quiet", schema="my_shop")
    dbt("run", "--quiet", "--full-refresh", schema="my_shop_full")

    assert differences("my_shop", "my_shop_full", MODELS) == {}
    # and the full refresh is right: per day, the orders placed that day, whenever they came
    expected = {}
    for _, _, amount, placed_at, _ in orders:
        day = placed_at.date().isoformat()
        count, revenue = expected.get(day, (0, 0.0))
        expected[day] = (count + 1, revenue + amount)
    assert rows(
        "select cast(order_date as string), orders, revenue from my_shop_full.orders_daily"
    ) == [(day, count, revenue) for day, (count, revenue) in sorted(expected.items())]
    assert rows("select count(*), sum(orders) from my_shop_full.customers_current") == [(4, 60)]
