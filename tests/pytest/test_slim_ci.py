"""Slim CI (`kappa-shop slim-ci`): after a change to one model, only that model and what is
downstream of it are built and tested, against a saved manifest of main, as a pull-request
workflow would; and the manifest of main can come from git."""

from __future__ import annotations

import shutil
import subprocess

from conftest import copy_project, kappa_shop_in, ledger_rows

from kappa_shop.ci.slim_ci import slim_ci

CHANGED = "models/marts/search/search_click_through.sql"
DOWNSTREAM = {"model.kappa_shop.search_click_through", "model.kappa_shop.search_ctr_daily"}


def _save_main_state(built_project, directory):
    """main's manifest, as a CI job on main saves it: `dbt parse` of the unchanged project."""
    built_project.dbt.invoke("parse", "--quiet")
    directory.mkdir()
    shutil.copy(built_project.root / "target" / "manifest.json", directory / "manifest.json")
    return directory


def test_slim_ci_builds_only_the_changed_model_and_its_downstream(built_project, spark, tmp_path):
    state = _save_main_state(built_project, tmp_path / "main-state")
    model = built_project.root / CHANGED
    original = model.read_text()
    before = sorted(tuple(row) for row in spark.table("kappa_shop.search_ctr_daily").collect())
    ledger_before = ledger_rows(spark, "kappa_shop__v1")
    try:
        # a pull request's change: the same rows, written differently
        model.write_text(original.replace("with\n", "with\n\n-- reviewed\n", 1))

        outcome = slim_ci(built_project.dbt, state=state, progress=False)
    finally:
        model.write_text(original)

    assert outcome.passed, outcome.statuses
    built_models = {unique_id for unique_id in outcome.statuses if unique_id.startswith("model.")}
    assert built_models == DOWNSTREAM
    tests = [unique_id for unique_id in outcome.statuses if unique_id.startswith("test.")]
    assert any("search_ctr_daily" in unique_id for unique_id in tests)
    assert set(outcome.statuses.values()) <= {"success", "pass", "no-op"}, outcome.statuses
    assert "exposure.kappa_shop.search_quality_report" in outcome.selected
    # both were rebuilt from the log (full refresh), nothing else ran, the rows are the same
    ledger_after = ledger_rows(spark, "kappa_shop__v1")
    new_runs = [row for row in ledger_after if row not in ledger_before]
    assert {row[0] for row in new_runs} == {"search_click_through", "search_ctr_daily"}
    assert {row[3] for row in new_runs} == {"full_refresh"}
    after = sorted(tuple(row) for row in spark.table("kappa_shop.search_ctr_daily").collect())
    assert after == before


def test_nothing_changed_builds_nothing(built_project, tmp_path):
    state = _save_main_state(built_project, tmp_path / "main-state")

    outcome = slim_ci(built_project.dbt, state=state, progress=False)

    assert outcome.selected == []
    assert outcome.statuses == {}


def test_the_manifest_of_main_can_come_from_git(tmp_path):
    # A clone on a branch with one changed model; `--base-ref main` parses main's manifest
    # in a temporary directory and selects what changed (a dry run lists, builds nothing).
    root = copy_project(tmp_path / "kappa_shop")
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", "-C", str(root)]
    subprocess.run([*git, "init", "--quiet", "--initial-branch=main"], check=True)
    subprocess.run([*git, "add", "--all"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "main"], check=True)
    model = root / CHANGED
    model.write_text(model.read_text().replace("with\n", "with\n\n-- reviewed\n", 1))

    result = kappa_shop_in(root, "slim-ci", "--base-ref", "main", "--dry-run")

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    listed = {line.strip() for line in result.stdout.splitlines() if line.startswith("  model.")}
    assert listed == DOWNSTREAM, result.stdout
    assert "changed since main" in result.stdout


def test_a_missing_state_is_one_clear_line(tmp_path):
    root = copy_project(tmp_path / "kappa_shop")

    result = kappa_shop_in(root, "slim-ci", "--state", str(tmp_path / "nowhere"))

    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"kappa-shop: error: no manifest.json in {tmp_path / 'nowhere'}: save main's "
        "target/manifest.json there (a CI artifact of main), or use --base-ref main"
    ]
