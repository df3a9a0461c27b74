"""The package's contract on hand-written batches: every mode built batch by batch in several
arrival orders equals its full refresh (the late changes at the edges of each model's reach
delivered alone among them), on parquet and on Delta, with its ledger compacted as it grows;
and each failure path stops the run with its one line, or is recovered by the next run."""

from __future__ import annotations

from pathlib import Path

import pytest
from contract_harness import (  # noqa: F401 (package_copy: a fixture)
    Project,
    check_build_leftovers,
    check_column_change,
    check_failed_write,
    check_ledger_gap,
    check_models_elsewhere,
    check_nothing_new,
    check_rebuilt_upstream,
    check_receipts,
    check_recomputed_report,
    check_run_lock,
    check_schedule,
    check_unfinished_write,
    check_unlisted_partition_files,
    package_copy,
)

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("schedule", ["reach_edges", "shuffled"])
def test_incremental_builds_equal_the_full_refresh(package_copy: Project, schedule: str) -> None:
    check_schedule(package_copy, schedule)


def test_incremental_builds_on_delta_equal_the_full_refresh(package_copy: Project) -> None:
    check_schedule(package_copy, "late_together", target="local_delta")


def test_upstream_models_rebuilt_alone_rebuild_their_children(package_copy: Project) -> None:
    check_rebuilt_upstream(package_copy)


def test_the_leftovers_of_a_killed_full_refresh_are_cleared(package_copy: Project) -> None:
    check_build_leftovers(package_copy)


def test_a_batch_without_receipt_waits_and_a_gap_in_the_receipts_stops_the_run(
    package_copy: Project,
) -> None:
    check_receipts(package_copy)


def test_a_gap_in_a_models_ledger_stops_its_run(package_copy: Project) -> None:
    check_ledger_gap(package_copy)


def test_a_changed_column_stops_the_incremental_run(package_copy: Project) -> None:
    check_column_change(package_copy)


def test_a_run_with_nothing_new_sends_no_statement_per_model(package_copy: Project) -> None:
    check_nothing_new(package_copy)


def test_a_second_run_while_the_lock_is_held_changes_nothing(package_copy: Project) -> None:
    check_run_lock(package_copy)


def test_models_outside_the_target_schema_keep_their_ledger_and_lock_beside_them(
    package_copy: Project,
) -> None:
    check_models_elsewhere(package_copy)


def test_a_run_that_fails_before_a_write_is_redone_by_the_next(package_copy: Project) -> None:
    check_failed_write(package_copy)


def test_files_a_kill_left_unlisted_in_a_recomputed_day_are_replaced(
    package_copy: Project, tmp_path: Path
) -> None:
    check_unlisted_partition_files(package_copy, tmp_path)


def test_a_killed_writes_task_output_is_never_merged_by_a_later_write(
    package_copy: Project,
) -> None:
    check_unfinished_write(package_copy)


def test_a_run_reports_what_it_recomputed(package_copy: Project) -> None:
    check_recomputed_report(package_copy)
