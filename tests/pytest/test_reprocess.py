"""Kappa reprocessing (kappa_shop.serving.versions, docs/reprocessing.md): readers query views that
point at one version of every model; a reprocess rebuilds every model from the log into a new
version beside it, catches up, tests, compares and only then switches; a rollback switches
back; a failed test or an interrupted switch leaves the served version as it was.

One scenario on the sample log, on Delta (the `local_delta` target), in this process's Spark,
in a serving schema of its own: the first build serves version 1; a reprocess of changed logic
(page views numbered from 0) builds version 2 while the old code keeps version 1 up to date
with a batch ingested during the rebuild; the switch; a rollback; a switch stopped half way; a
reprocess whose data test fails. (A reprocess killed with SIGKILL, on parquet:
test_reprocess_killed.)"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import DELTA_TARGET, edited

from kappa_shop.errors import KappaShopError
from kappa_shop.ingest.ingestion import ingest
from kappa_shop.log.landing import batch_numbers, deliver
from kappa_shop.runtime.dbt import DbtProject
from kappa_shop.runtime.warehouse import checksums
from kappa_shop.serving import reprocess
from kappa_shop.serving import versions as serving
from kappa_shop.serving.pipeline import build, prepare_sample_log
from kappa_shop.serving.reprocess import Reprocess
from kappa_shop.serving.versions import (
    build_served,
    drop_old_versions,
    list_versions,
    read_versions,
    rollback,
)

SERVING = "reprocessed"
UNTESTED = ("--exclude-resource-type", "test", "unit_test")
# the logic change a reprocess serves: a session's page views numbered from 0
NUMBERING = (
    "models/marts/web/page_views.sql",
    ") as view_number_in_session,",
    ") - 1 as view_number_in_session,",
)
# a bug the data tests catch: the sessionizing model stops honouring the configured gap
BUG = (
    "models/intermediate/web/int_user_activity_sessionized.sql",
    "'occurred_at', var('session_inactivity_gap_minutes')",
    "'occurred_at', 10",
)


def _views(warehouse: Any) -> dict[str, str]:
    """Each view of the serving schemas (models, reference seeds) and what it selects from."""
    return serving.view_targets(warehouse, [SERVING, f"{SERVING}_reference"])


def _same(warehouse: Any, relations: dict[str, str]) -> list[str]:
    """The serving names whose rows differ from the relation given for them."""
    served = checksums(warehouse, list(relations))
    physical = checksums(warehouse, list(relations.values()))
    return sorted(name for name, target in relations.items() if served[name] != physical[target])


def _typed(root: Path, *arguments: str) -> Any:
    """`dbt <arguments>` as a person types it in the project directory (KAPPA_SHOP_SCHEMA set,
    the Delta target named, no vars): dbt's outcome."""
    from dbt.cli.main import dbtRunner

    return dbtRunner().invoke(
        [*arguments, "--project-dir", str(root), "--profiles-dir", str(root), "--target",
         DELTA_TARGET, "--quiet"]
    )  # fmt: skip


def _built_into(root: Path, model: str) -> str:
    """The schema a person's `dbt run --select <model>` builds the model in (it must succeed)."""
    outcome = _typed(root, "run", "--select", model)
    assert outcome.success, outcome.exception
    (result,) = [item for item in outcome.result.results if item.node.name == model]
    assert str(result.status) == "success", result.message
    return str(result.node.schema)


@pytest.fixture(scope="module")
def scenario(spark: Any, project_copy: Path, tmp_path_factory: pytest.TempPathFactory):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", SERVING)
    # on Delta (test_reprocess_killed reprocesses on parquet)
    project = DbtProject(root=project_copy, target=DELTA_TARGET, profiles_dir=project_copy)
    warehouse = project.warehouse()
    for schema in [row["namespace"] for row in warehouse.sql(f"show schemas like '{SERVING}*'")]:
        warehouse.sql(f"drop schema {schema} cascade")
    log_dir = prepare_sample_log(project)
    landing = tmp_path_factory.mktemp("reprocess-landing")
    batches = batch_numbers(log_dir)

    def land(numbers: list[int]) -> None:
        deliver(log_dir, landing, numbers)
        ingest(spark, landing, project.raw_schema, progress=lambda line: None, warehouse=warehouse)

    seen: dict[str, Any] = {"progress": []}
    land(batches[:-2])
    build_served(project, UNTESTED)
    seen["v1 views"] = _views(warehouse)
    seen["typed dbt run, first build"] = _built_into(project_copy, "orders_daily")
    numbering = (project_copy / NUMBERING[0], *NUMBERING[1:])

    step = Reprocess(project, progress=seen["progress"].append)
    with edited(*numbering):
        step.start()
        step.build()
    # during the reprocess: readers read version 1; a batch arrives and the old code (the
    # served version's own) brings version 1 up to date with it
    seen["during: views"] = _views(warehouse)
    land(batches[-2:-1])
    build_served(project, UNTESTED)
    seen["during: differ from v1"] = _same(warehouse, seen["v1 views"])
    seen["newest batch"] = serving.newest_ingested(warehouse, project.raw_schema)
    seen["v1 through"] = step.through(1)
    with edited(*numbering):
        step.catch_up()
        step.test()
        seen["report"] = step.report()
        step.switch()
    seen["v2 through"] = step.through()
    seen["after switch: views"] = _views(warehouse)
    seen["after switch: differ from v2"] = _same(warehouse, seen["after switch: views"])
    seen["v2 relations"] = step.relations
    seen["typed dbt run, after the switch"] = _built_into(project_copy, "orders_daily")

    rollback(project, progress=seen["progress"].append)
    seen["after rollback: views"] = _views(warehouse)
    seen["typed dbt run, after the rollback"] = _built_into(project_copy, "orders_daily")

    # a switch to version 2 killed after its third view (a kill there is what this stops at)
    def killed(name: str) -> None:
        if name == "switch:3":
            raise KeyboardInterrupt(name)

    monkeypatch.setattr(serving, "fault_point", killed)
    with pytest.raises(KeyboardInterrupt):
        serving.switch(warehouse, SERVING, 2, step.relations)
    seen["killed switch: views"] = _views(warehouse)
    monkeypatch.undo()
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", SERVING)
    seen["next command: served"] = serving.open_serving(warehouse, SERVING).served
    seen["next command: views"] = _views(warehouse)

    # a reprocess whose data tests fail
    failing = Reprocess(project, progress=seen["progress"].append)
    with edited(project_copy / BUG[0], *BUG[1:]), pytest.raises(KappaShopError) as refused:
        failing.run()
    seen["refused"] = str(refused.value)
    results = json.loads((failing.building.target_path() / "run_results.json").read_text())
    seen["failed tests"] = [
        result["unique_id"] for result in results["results"] if result["status"] == "fail"
    ]
    seen["after refusal: views"] = _views(warehouse)
    seen["versions"] = read_versions(warehouse, SERVING)

    # old versions dropped: the served one and the one to roll back to are kept
    seen["dropped"] = drop_old_versions(project, keep=2, progress=seen["progress"].append)
    seen["schemas after drop"] = sorted(
        row["namespace"] for row in warehouse.sql(f"show schemas like '{SERVING}__v*'")
    )
    seen["listing"] = list_versions(project)
    yield seen
    monkeypatch.undo()


def test_the_first_build_serves_version_one_through_a_view_per_model_and_seed(scenario):
    views = scenario["v1 views"]
    assert len(views) > 30
    assert views[f"{SERVING}.sessions"] == f"{SERVING}__v1.sessions"
    assert views[f"{SERVING}_reference.product_catalog"] == (
        f"{SERVING}__v1_reference.product_catalog"
    )
    assert all(target.startswith(f"{SERVING}__v1") for target in views.values())


def test_during_a_reprocess_readers_read_the_served_version_kept_up_to_date(scenario):
    assert scenario["during: views"] == scenario["v1 views"]
    assert scenario["during: differ from v1"] == []
    assert scenario["v1 through"] == scenario["newest batch"]


def test_the_new_version_catches_up_with_batches_ingested_during_the_rebuild(scenario):
    assert scenario["v2 through"] == scenario["newest batch"]
    assert any("catching up" in line for line in scenario["progress"])


def test_the_comparison_names_what_the_new_logic_changed(scenario):
    changes = {change.name: change for change in scenario["report"].changes}
    page_views = changes[f"{SERVING}.page_views"]
    assert page_views.rows_before == page_views.rows_after > 0
    assert page_views.changed == page_views.rows_after  # every view renumbered, none added
    assert page_views.added == page_views.removed == 0
    # nothing else changed
    assert [name for name, change in changes.items() if not change.equal] == [
        f"{SERVING}.page_views"
    ]


def test_after_the_switch_every_name_reads_the_new_version(scenario):
    views = scenario["after switch: views"]
    assert set(views) == set(scenario["v1 views"])
    assert all(target.startswith(f"{SERVING}__v2") for target in views.values())
    assert scenario["after switch: differ from v2"] == []


def test_a_rollback_serves_the_old_version_again(scenario):
    assert scenario["after rollback: views"] == scenario["v1 views"]


def test_a_switch_killed_half_way_is_undone_by_the_next_command(scenario):
    half = scenario["killed switch: views"]
    assert sum(target.startswith(f"{SERVING}__v2") for target in half.values()) == 3
    assert scenario["next command: served"] == 1
    assert scenario["next command: views"] == scenario["v1 views"]
    assert scenario["versions"].state(2) == "served before"


def test_a_reprocess_whose_data_tests_fail_does_not_switch_and_says_why(scenario):
    refused = scenario["refused"]
    assert "tests failed on version 3" in refused
    assert "not switched" in refused and "still serves version 1" in refused
    assert any(
        name.endswith(".assert_consecutive_sessions_more_than_gap_apart")
        for name in scenario["failed tests"]
    )
    assert scenario["after refusal: views"] == scenario["v1 views"]
    versions = scenario["versions"]
    assert versions.served == 1
    assert versions.state(3) == "failed"


def test_old_versions_are_dropped_keeping_the_served_one_and_the_one_to_roll_back_to(scenario):
    assert scenario["dropped"] == [3]
    assert scenario["schemas after drop"] == [
        f"{SERVING}__v1", f"{SERVING}__v1_reference", f"{SERVING}__v2", f"{SERVING}__v2_reference"
    ]  # fmt: skip
    listing = scenario["listing"].splitlines()
    assert len(listing) == 4  # a header, the two versions kept, where the views point
    assert "serving" in listing[1] and f"{SERVING}__v1" in listing[1]
    assert "served before" in listing[2]
    views = len(scenario["v1 views"])
    assert listing[3] == f"{views} views in {SERVING}, {SERVING}_reference point at version 1"


def test_dbt_typed_in_the_project_builds_the_served_version(scenario):
    # `dbt run` with no vars, after the first build, a reprocess's switch and a rollback
    assert scenario["typed dbt run, first build"] == f"{SERVING}__v1"
    assert scenario["typed dbt run, after the switch"] == f"{SERVING}__v2"
    assert scenario["typed dbt run, after the rollback"] == f"{SERVING}__v1"


def test_dbt_cannot_build_into_a_serving_schema(scenario, project_copy):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KAPPA_SHOP_SCHEMA", SERVING)
        project = DbtProject(root=project_copy, profiles_dir=project_copy)
        # kappa-shop's destination is the schema itself (kappa_version null): the views
        with pytest.raises(KappaShopError) as refused:
            project.invoke("run", "--select", "sessions")
        assert f"{SERVING} is a serving schema" in str(refused.value)
        assert "--vars 'kappa_version: 1'" in str(refused.value)
        # a record of the served version behind the registry's (a switch made elsewhere)
        record = project_copy / serving.SERVED_RECORD
        kept = record.read_text()
        serving.record_served(project.to(replace(project.destination, target=DELTA_TARGET)), 2)
        try:
            stale = _typed(project_copy, "run", "--select", "sessions")
        finally:
            record.write_text(kept)
    assert not stale.success
    assert f"{SERVING} serves version 1 ({SERVING}__v1), but this project's record of it says " \
        f"{SERVING}__v2" in str(stale.exception)  # fmt: skip
    assert "run `kappa-shop versions` here to record it again" in str(stale.exception)


def test_a_schema_of_tables_built_by_dbt_is_not_turned_into_a_serving_schema(
    spark, project_copy, monkeypatch
):
    schema = f"{SERVING}_built_directly"
    spark.sql(f"create schema if not exists {schema}")
    spark.sql(f"create table if not exists {schema}.sessions (session_id string) using parquet")
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", schema)
    project = DbtProject(root=project_copy, profiles_dir=project_copy)

    with pytest.raises(KappaShopError) as refused:
        build_served(project, UNTESTED)

    assert f"{schema} holds tables built by dbt directly (sessions)" in str(refused.value)
    # nothing made it a serving schema: dbt still builds there
    assert [row.tableName for row in spark.sql(f"show tables in {schema}").collect()] == [
        "sessions"
    ]


def test_a_build_from_an_ingested_log_with_none_ingested_says_what_to_do(
    spark, project_copy, monkeypatch
):
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", f"{SERVING}_never_ingested")
    project = DbtProject(root=project_copy, profiles_dir=project_copy)

    with pytest.raises(KappaShopError) as refused:
        build(project, docs=False, log_source="ingested")

    assert str(refused.value) == (
        f"{SERVING}_never_ingested_raw has no raw_web_events, raw_searches, raw_search_clicks "
        "and 3 more: ingest the log first (`kappa-shop ingest --landing DIR`, or `--kafka`), or "
        "build the sample (`--log generated` or `--log seeds`)"
    )
    # nothing was built or served
    assert not spark.sql(f"show schemas like '{SERVING}_never_ingested*'").collect()


def test_a_reprocess_stopped_by_an_error_records_its_version_failed_with_the_reason(
    scenario, spark, project_copy, monkeypatch
):
    # (after the scenario: version 1 served, 2 kept; the build step fails at once)
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", SERVING)
    project = DbtProject(root=project_copy, target=DELTA_TARGET, profiles_dir=project_copy)
    step = Reprocess(project, progress=lambda line: None)

    def fails() -> None:
        raise KappaShopError("dbt build failed: 1 of 41 nodes errored")

    monkeypatch.setattr(step, "build", fails)
    with pytest.raises(KappaShopError):
        step.run()

    versions = read_versions(project.warehouse(), SERVING)
    assert versions.served == 1
    assert versions.state(step.version) == "failed" and not versions.unfinished(step.version)
    assert versions.detail(step.version) == (
        "KappaShopError: dbt build failed: 1 of 41 nodes errored"
    )


def test_of_two_reprocesses_started_at_once_the_second_stops_having_changed_nothing(
    scenario, spark, project_copy, monkeypatch
):
    # Another reprocess (on a shared metastore) records the same new version just before this
    # one does: made exactly, its row written between this one's reading of the registry and
    # its own row.
    monkeypatch.setenv("KAPPA_SHOP_SCHEMA", SERVING)
    project = DbtProject(root=project_copy, target=DELTA_TARGET, profiles_dir=project_copy)
    warehouse = project.warehouse()
    version = read_versions(warehouse, SERVING).next_version
    other = f"{SERVING}__v{version}"
    spark.sql(f"create schema {other}")
    spark.sql(f"create table {other}.sessions (session_id string) using parquet")
    record = serving.record_event

    def after_the_other(warehouse, serving_schema, number, event, *rest, **named):
        if event == "building":
            record(
                warehouse, serving_schema, number, event, detail="reprocess by pid 1 on elsewhere"
            )
        record(warehouse, serving_schema, number, event, *rest, **named)

    monkeypatch.setattr(reprocess, "record_event", after_the_other)
    step = Reprocess(project, progress=lambda line: None)
    with pytest.raises(KappaShopError) as stopped:
        step.start()

    assert str(stopped.value) == (
        f"another reprocess (reprocess by pid 1 on elsewhere) started version {version} of "
        f"{SERVING} at the same moment; it goes on, this one stops having changed nothing: "
        "see `kappa-shop versions`"
    )
    # the other's tables are untouched, and it is the version's reprocess
    assert [row.tableName for row in spark.sql(f"show tables in {other}").collect()] == ["sessions"]
    versions = read_versions(warehouse, SERVING)
    assert versions.served == 1 and versions.unfinished(version)
    assert versions.detail(version) == "reprocess by pid 1 on elsewhere"
