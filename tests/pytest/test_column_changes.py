"""A model whose columns changed is never written incrementally: an incremental run writes only
its new rows, so its table would hold rows of two shapes (or quietly leave the new column out)
and no longer equal a full refresh. The run stops with one clear error naming the difference
and the rebuild command, and leaves the table and its ledger as they were; `--full-refresh`
then builds the new columns. One model of each contract mode, on the built sample project
(parquet); tests/pytest/test_delta.py does the same on Delta."""

from __future__ import annotations

import pytest
from conftest import edited, ledger_rows

# the built project's models: version 1 of the serving schema kappa_shop
# (kappa_shop.serving.versions)
SCHEMA = "kappa_shop__v1"


def _columns(spark, model: str) -> dict[str, str]:
    return {
        field.name: field.dataType.simpleString()
        for field in spark.table(f"{SCHEMA}.{model}").schema.fields
    }


def _run(built_project, model: str, *arguments: str) -> dict[str, tuple[str, str]]:
    """`dbt run --select model`: each model's status and message."""
    project = built_project.dbt  # (its served version, version 1: SCHEMA)
    result = project.to(project.destination.at_version(1)).invoke(
        "run", "--select", model, *arguments, "--quiet", tolerate_failures=True
    )
    return {item.node.name: (str(item.status), item.message or "") for item in result.results
            if item.node.resource_type == "model"}  # fmt: skip


@pytest.mark.parametrize(
    ("model", "path", "change", "difference"),
    [
        (  # batches mode: a column added
            "stg_web__events",
            "models/staging/web/stg_web__events.sql",
            "select *, true as is_reviewed from final",
            "new in the model: is_reviewed (boolean)",
        ),
        (  # keys mode: a column dropped
            "orders_current",
            "models/marts/orders/orders_current.sql",
            "select * except (order_status) from final",
            "gone from the model: order_status",
        ),
        (  # days mode: a column's type changed
            "int_user_activity_sessionized",
            "models/intermediate/web/int_user_activity_sessionized.sql",
            "select * except (page_path), length(page_path) as page_path from final",
            "page_path is string in the table, int in the model",
        ),
    ],
    ids=["batches", "keys", "days"],
)
def test_a_changed_column_stops_the_incremental_run_with_the_rebuild_command(
    built_project, spark, model, path, change, difference
):
    columns_before, ledger_before = _columns(spark, model), ledger_rows(spark, SCHEMA, model)
    rows_before = spark.table(f"{SCHEMA}.{model}").count()
    assert ledger_before, f"{model} has no ledger: the built project is not incremental"

    with edited(built_project.root / path, "select * from final", change):
        statuses = _run(built_project, model)

    status, message = statuses[model]
    assert status == "error"
    assert difference in message, message
    assert f"dbt build --full-refresh --select {model}+" in message, message
    # nothing was written
    assert _columns(spark, model) == columns_before
    assert ledger_rows(spark, SCHEMA, model) == ledger_before
    assert spark.table(f"{SCHEMA}.{model}").count() == rows_before


def test_the_unchanged_model_runs_and_a_full_refresh_takes_the_new_column(built_project, spark):
    model, path = "search_ctr_daily", "models/marts/search/search_ctr_daily.sql"
    rows = sorted(map(tuple, spark.table(f"{SCHEMA}.{model}").collect()))
    # unchanged: the incremental run passes the check (nothing new to write)
    assert _run(built_project, model)[model][0] == "success"

    with edited(built_project.root / path, "select * from final",
                "select *, 1 as schema_version from final"):  # fmt: skip
        assert _run(built_project, model)[model][0] == "error"
        assert _run(built_project, model, "--full-refresh")[model][0] == "success"
        assert _columns(spark, model)["schema_version"] == "int"
        assert spark.table(f"{SCHEMA}.{model}").count() == len(rows)

    # and back: the model without the column is rebuilt to the rows it had
    assert _run(built_project, model)[model][0] == "error"
    assert _run(built_project, model, "--full-refresh")[model][0] == "success"
    assert sorted(map(tuple, spark.table(f"{SCHEMA}.{model}").collect())) == rows
