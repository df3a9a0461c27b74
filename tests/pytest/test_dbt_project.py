"""DbtProject, dbt in this process: each destination keeps its own target path, so that dbt
parses the project once per destination and not again at every switch between them (a proof
alternates between its incremental and its full-refresh schemas at every round). No Spark:
`dbt parse` opens no connection."""

from __future__ import annotations

from pathlib import Path

from conftest import copy_project

from kappa_shop.runtime.dbt import DbtProject

FULL_PARSE = "Unable to do partial parsing"
KEPT = "Partial parsing enabled, no changes found"


def test_each_destination_is_parsed_once_and_keeps_its_artifacts(tmp_path: Path):
    root = copy_project(tmp_path / "kappa_shop")
    project = DbtProject(root=root, profiles_dir=root)
    incremental = project.elsewhere("proof_incremental", "proof_raw")
    full = project.elsewhere("proof_full", "proof_raw")

    for each in (incremental, full, incremental):
        each.invoke("parse", "--quiet")

    log = (root / "logs" / "dbt.log").read_text()
    # a full parse for each of the two destinations, none on coming back to the first
    assert log.count(FULL_PARSE) == 2, log.count(FULL_PARSE)
    assert log.count(KEPT) == 1, log.count(KEPT)
    for each in (incremental, full):
        assert each.target_path().parent == root / "target" / "destinations"
        assert (each.target_path() / "manifest.json").is_file()
        assert (each.target_path() / "partial_parse.msgpack").is_file()
    assert "proof_incremental" in incremental.target_path().name

    # the profile's own destination writes where plain dbt does; with vars of its own (which
    # dbt hashes into its partial-parsing state too) it is another destination
    assert project.target_path() == root / "target"
    with_vars = project.target_path({"kappa_ledger_compact_after": 3})
    assert with_vars.parent == root / "target" / "destinations"
    assert with_vars != project.target_path({"kappa_ledger_compact_after": 4})
