"""CI's documentation checks, without Spark: `make docs-check` fails naming whatever lost its
description, and the lineage picture in the README is checked against the manifest."""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT, copy_project, kappa_shop_in, run_in

from kappa_shop.ci.lineage import PICTURE


@pytest.fixture(scope="module")
def damaged_project(tmp_path_factory):
    """A copy of the project with one column description, one macro argument type and one
    exposure removed, checked by `make docs-check` (dbt parse, docs coverage, lineage)."""
    root = copy_project(tmp_path_factory.mktemp("damaged") / "kappa_shop")
    sessions = root / "models" / "marts" / "web" / "sessions.yml"
    text = sessions.read_text()
    line = "        description: Id of the user whose session this is.\n"
    assert text.count(line) == 1
    sessions.write_text(text.replace(line, ""))
    macros = root / "macros" / "_macros.yml"
    text = macros.read_text()
    line = "        type: list[string]\n        description: SQL expressions"
    assert text.count(line) == 1
    macros.write_text(text.replace(line, "        description: SQL expressions"))
    exposures = root / "models" / "marts" / "_marts__exposures.yml"
    text = exposures.read_text()
    start = text.index("  - name: pipeline_health_dashboard")
    exposures.write_text(text[:start].rstrip() + "\n")
    make = run_in(
        root, ["make", "--no-print-directory", "docs-check", f"VENV={REPO_ROOT / '.venv'}"]
    )
    return root, make


def test_a_missing_column_description_fails_make_naming_it(damaged_project):
    _, make = damaged_project

    assert make.returncode != 0, make.stdout + make.stderr
    assert "docs coverage: 2 undocumented:" in make.stderr
    assert "column sessions.user_id (models/marts/web/sessions.yml): no description" in (
        make.stderr
    )
    assert "argument surrogate_key(column_names)" in make.stderr
    assert "needs a type and a description" in make.stderr


def test_a_stale_lineage_picture_fails_the_check_until_redrawn(damaged_project):
    root, _ = damaged_project
    assert "Pipeline health dashboard" in (root / PICTURE).read_text()

    stale = kappa_shop_in(root, "lineage", "--check")
    assert stale.returncode == 1
    assert f"{PICTURE} is stale" in stale.stderr
    assert "make lineage" in stale.stderr

    redrawn = kappa_shop_in(root, "lineage")
    assert redrawn.returncode == 0, redrawn.stderr
    assert kappa_shop_in(root, "lineage", "--check").returncode == 0
    picture = (root / PICTURE).read_text()
    assert "Pipeline health dashboard" not in picture
    assert "Search quality report" in picture
    for model in ("stg_web__event_deliveries", "sessions", "search_ctr_daily", "web.events"):
        assert f">{model}</text>" in picture, model
