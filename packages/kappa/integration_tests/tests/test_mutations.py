"""The proof has teeth: each bug below, seeded into a copy of the package, makes the package's
integration tests fail, for the reason that bug must be caught for.

A mutant is a list of exact text replacements in the package's macros (each must match once,
so a mutant cannot silently stop applying when the code moves). Each is run against the
integration check that catches it (contract_harness.CHECKS), in a copy of its own, and must
fail that check for its reason (contract_harness.Reason: the tables differ from the full
refresh, an expected error did not come, ...). The test fails if the check passes, fails for
another reason, or crashes: a dbt error the check did not expect (a Jinja or SQL error in the
mutated macro) is a broken mutant, not a catch. The table of what caught what is printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from contract_harness import (  # noqa: F401 (package_copy: a fixture)
    CHECKS,
    PACKAGE_ROOT,
    CheckFailed,
    DbtFailure,
    Project,
    Reason,
    package_copy,
)

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str  # what a developer could plausibly get wrong
    replacements: tuple[tuple[str, str, str], ...]  # (macro file, exact text, replacement)
    caught_by: str  # the check of contract_harness.CHECKS that must fail
    reason: Reason  # what that check must find broken


RECORD = (
    "{% do kappa._record_consumed_batches("
    "this, first_batch_id, last_batch_id, full_refresh, partitions, fingerprint) %}"
)
MUTANTS = (
    Mutant(
        "wrong_first_batch",
        "a model's first new batch is one too far: a batch is skipped",
        (
            (
                "plan/_first_new_batch.sql",
                "kappa.consumed_through(this) + 1",
                "kappa.consumed_through(this) + 2",
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "reach_ignored",
        "a change's reach before its day is ignored when planning the days to recompute",
        (
            (
                "plan/_touched_days.sql",
                "{% set reach_before = '0 minutes' if reach.before == 'all' else reach.before %}",
                "{% set reach_before = '0 minutes' %}",
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "emptied_partition_kept",
        "recomputed partitions are overwritten without their drop first: a partition that"
        " comes out empty keeps its old rows",
        (
            (
                "write/_write_partitions.sql",
                "{%- call statement('drop_recomputed_partitions') -%}",
                "{%- if false -%}{%- call statement('drop_recomputed_partitions') -%}",
            ),
            (
                "write/_write_partitions.sql",
                "{%- do kappa._fault_point('after_drop') -%}",
                "{%- endif -%}{%- do kappa._fault_point('after_drop') -%}",
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "fingerprint_blind",
        "the SQL fingerprint ignores the SQL: a run with nothing new skips the column check of"
        " a model whose columns changed",
        (("write/_sql_fingerprint.sql", "local_md5(shape)", "local_md5('')"),),
        "column_change",
        Reason.MISSING_ERROR,
    ),
    Mutant(
        "history_not_consulted",
        "before_new_batches() sees no earlier batch: a redelivery is taken for a new event",
        (("predicates/before_new_batches.sql", "< {{ kappa._first_new_batch() }}", "< 1"),),
        "schedule_shuffled",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "ledger_before_write",
        "the ledger records a run's batches before its table is written",
        (
            (
                "materializations/exact_incremental.sql",
                RECORD,
                "",
            ),
            (
                "materializations/exact_incremental.sql",
                "{%- do kappa._fault_point('before_write') -%}",
                "{%- if full_refresh or first_batch_id <= last_batch_id -%}"
                + RECORD
                + "{%- endif -%}{%- do kappa._fault_point('before_write') -%}",
            ),
        ),
        "failed_write",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "bucket_dropped",
        "a touched key bucket (bucket 0) is left out of the plan",
        (
            (
                "plan/_buckets_touched.sql",
                "where bucket is not null",
                "where bucket is not null and bucket != 0",
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "day_dropped",
        "the last touched day is left out of the plan",
        (
            (
                "plan/_days_touched.sql",
                "{% set days = run_query(days_query).columns[0].values() | list %}",
                "{% set days = (run_query(days_query).columns[0].values() | list)[:-1] %}",
            ),
        ),
        "schedule_shuffled",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "day_parent_not_traced",
        "a days parent's run that consumed exactly the child's first new batch is not traced",
        (
            (
                "plan/_touched_days.sql",
                '"\' and last_batch_id >= " ~ first_batch_id ~ ")"',
                '"\' and last_batch_id > " ~ first_batch_id ~ ")"',
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "key_parent_not_traced",
        "a keys parent's run that consumed exactly the child's first new batch is not traced",
        (
            (
                "plan/_touched_buckets.sql",
                '"\' and last_batch_id >= " ~ first_batch_id ~ ")"',
                '"\' and last_batch_id > " ~ first_batch_id ~ ")"',
            ),
        ),
        "schedule_shuffled",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "batch_without_receipt_read",
        "in_new_batches() has no upper bound: a batch without its receipt is read",
        (
            (
                "predicates/in_new_batches.sql",
                "between {{ kappa._first_new_batch() }} and {{ last_batch_id }}",
                ">= {{ kappa._first_new_batch() }}",
            ),
        ),
        "receipts",
        Reason.WRONG_ROWS,
    ),
    Mutant(
        "receipt_gap_passed_over",
        "a gap in the ingestion receipts is not reported",
        (
            (
                "plan/_ingested_through.sql",
                "row['batches'] > 0 and (row['first_batch_id'] != 1",
                "false and (row['first_batch_id'] != 1",
            ),
        ),
        "receipts",
        Reason.MISSING_ERROR,
    ),
    Mutant(
        "changed_columns_appended",
        "a model whose columns changed is appended to",
        (("write/_check_model_columns.sql", "{%- if differences -%}", "{%- if false -%}"),),
        "column_change",
        Reason.MISSING_ERROR,
    ),
    Mutant(
        "lock_ignored",
        "a live holder of the schema's run lock is taken for a crashed one: the run goes ahead",
        (
            (
                "lock/_run_lock_holders.sql",
                "{%- do live.append(row) -%}",
                "{%- do stale.append(row) -%}",
            ),
        ),
        "run_lock",
        Reason.MISSING_ERROR,
    ),
    Mutant(
        "ledger_gap_passed_over",
        "a model's ledger that is not one unbroken range is read as if it were",
        (
            (
                "ledger/consumed_through.sql",
                "{% if row['first_batch_id'] != 1 or row['batches'] != row['last_batch_id'] %}",
                "{% if false %}",
            ),
        ),
        "ledger_gap",
        Reason.MISSING_ERROR,
    ),
    Mutant(
        "report_counts_whole_table",
        "a run's closing line counts every row of the model's table as written, not those of"
        " the partitions it recomputed",
        (
            (
                "write/_write_recomputed.sql",
                '\'rows\': "select count(*) as written from " ~ this ~ " where " ~ written,',
                "'rows': \"select count(*) as written from \" ~ this,",
            ),
        ),
        "recomputed_report",
        Reason.WRONG_REPORT,
    ),
    Mutant(
        "nothing_new_too_soon",
        "the nothing-new shortcut says nothing new when exactly one batch is new: a recomputing"
        " model plans no partition and consumes the batch",
        (
            (
                "plan/_nothing_new_to_recompute.sql",
                "first_batch_id > kappa._available_through(model)",
                "first_batch_id >= kappa._available_through(model)",
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "planner_bucket_differs",
        "the planner computes a key's bucket with another hash than key_bucket(), which the"
        " model's predicate and partition column use: it recomputes the wrong buckets",
        (
            (
                "plan/_touched_buckets.sql",
                '"select " ~ kappa.key_bucket(key) ~ " as bucket from "',
                '"select pmod(hash(" ~ key ~ "), " ~ var(\'kappa_key_buckets\', 16)'
                ' ~ ") as bucket from "',
            ),
        ),
        "schedule_shuffled",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "after_reach_ignored",
        "a change's reach after its day is ignored when planning: the day before a late event"
        " just after midnight is not recomputed",
        (
            (
                "plan/_touched_days.sql",
                "{% set reach = kappa._input_reach(model) %}",
                "{% set reach = {'before': kappa._input_reach(model).before,"
                " 'after': '0 minutes'} %}",
            ),
        ),
        "schedule_reach_edges",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "rebuilt_parent_missed",
        "a recomputing parent rebuilt in full by a run that consumed exactly the child's first"
        " new batch is not seen: the child traces no partition from it instead of rebuilding",
        (
            (
                "plan/_rebuilt_since.sql",
                "and last_batch_id >= {{ first_batch_id }}",
                "and last_batch_id > {{ first_batch_id }}",
            ),
        ),
        "rebuilt_upstream",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "bookkeeping_in_the_target_schema",
        "the ledger and run lock kept in the target schema too, where a project's"
        " generate_schema_name does not build the models (a serving schema's readers see them)",
        (
            (
                "hooks/_contract_schemas.sql",
                "{{ return(schemas | sort if schemas | length > 0 else [target.schema]) }}",
                "{{ return((schemas + [target.schema]) | unique | sort) }}",
            ),
        ),
        "models_elsewhere",
        Reason.WRONG_ROWS,
    ),
    Mutant(
        "compacted_range_short",
        "the compacted ledger row ends a batch short of the rows it replaces: a range dropped",
        (
            (
                "ledger/_compact_batch_ledger.sql",
                "'last_batch_id': through,",
                "'last_batch_id': through - 1,",
            ),
        ),
        "schedule_reach_edges",
        Reason.LEDGER,
    ),
    Mutant(
        "compacted_rows_kept",
        "the rows a compacted row covers are not dropped: the ledger grows with every run",
        (
            (
                "ledger/_compact_batch_ledger.sql",
                "{%- if dropped | length > 0 -%}",
                "{%- if false -%}",
            ),
        ),
        "schedule_reach_edges",
        Reason.LEDGER,
    ),
    Mutant(
        "wrong_leftover_dropped",
        "the cleanup drops the leftover's name unqualified: a table of that name in the"
        " session's current schema, not the leftover in the target schema",
        (
            (
                "recovery/_drop_build_leftovers.sql",
                "drop table if exists {{ schema_name }}.{{ row['tableName'] }}",
                "drop table if exists {{ row['tableName'] }}",
            ),
        ),
        "build_leftovers",
        Reason.LEFTOVER_KEPT,
    ),
    Mutant(
        "leftover_location_not_cleared",
        "a leftover whose model has no table is dropped without clearing the model's location:"
        " the model's rebuild cannot be renamed into place",
        (
            (
                "recovery/_drop_build_leftovers.sql",
                "{%- if model_tables | length == 0 -%}",
                "{%- if false -%}",
            ),
        ),
        "build_leftovers",
        Reason.NOT_RECOVERED,
    ),
    Mutant(
        "delta_replaced_batches_off_by_one",
        "on Delta, a batch model's replace-where starts at the last consumed batch instead of"
        " the first new one: that batch's rows are deleted",
        (
            (
                "write/_write_batches.sql",
                "between {{ first_batch_id }} and {{ last_batch_id }}",
                "between {{ first_batch_id - 1 }} and {{ last_batch_id }}",
            ),
        ),
        "delta_schedule",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "delta_emptied_partition_kept",
        "on Delta, the recomputed partitions are overwritten where rows land (dynamic overwrite)"
        " instead of replaced as planned: a partition that comes out empty keeps its old rows",
        (
            (
                "write/_write_partitions.sql",
                "insert into {{ this }} replace where {{ partition_column }} in ({{ values }})",
                "insert overwrite table {{ this }}",
            ),
        ),
        "delta_schedule",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "delta_merge_keeps_vanished_rows",
        "on Delta, a keys model's merge updates and inserts but deletes nothing: the row of a"
        " key its recompute no longer gives (a closed user) stays",
        (
            (
                "write/_merge_partitions.sql",
                "when not matched by source and target.{{ partition_column }} in ({{ values }})"
                " then delete",
                "",
            ),
        ),
        "delta_schedule",
        Reason.DIFFERENCE,
    ),
    Mutant(
        "recomputed_rows_appended",
        "on parquet, a recomputed partition's rows appended after the drop (`insert into`):"
        " staged in the table's shared `_temporary`, where a killed write's task output waits"
        " to be merged with them",
        (
            (
                "write/_write_partitions.sql",
                "insert overwrite table {{ this }} partition ({{ partition_column }})",
                "insert into {{ this }} partition ({{ partition_column }})",
            ),
        ),
        "unfinished_write",
        Reason.DIFFERENCE,
    ),
)


def mutate(root: Path, mutant: Mutant) -> None:
    """Apply the mutant's replacements to the package copy at `root`."""
    for relative, text, replacement in mutant.replacements:
        path = root / "macros" / relative
        source = path.read_text()
        assert source.count(text) == 1, f"{mutant.name}: {text!r} is not once in {relative}"
        path.write_text(source.replace(text, replacement))


@pytest.mark.parametrize("mutant", MUTANTS, ids=[mutant.name for mutant in MUTANTS])
def test_the_integration_tests_catch_the_seeded_bug(
    package_copy: Project, tmp_path: Path, mutant: Mutant
) -> None:
    # package_copy: the seed log is loaded (every copy reads the same seed schema)
    destination = tmp_path / "kappa"
    project = Project.copy_of(PACKAGE_ROOT, destination, prefix=f"mut_{mutant.name}")
    mutate(destination, mutant)
    # no `dbt parse` first: a mutant that is not valid dbt fails the check's first command,
    # which no check expects to fail (a broken mutant, below)
    try:
        CHECKS[mutant.caught_by](project)
    except CheckFailed as caught:
        assert caught.reason == mutant.reason, (
            f"{mutant.name} ({mutant.bug}) failed {mutant.caught_by} for {caught.reason}, not"
            f" for {mutant.reason}: {caught.detail}"
        )
        said = caught.detail.splitlines()[0][:160]
        print(f"{mutant.name}: caught by {mutant.caught_by} for {caught.reason}: {said}")
        return
    except DbtFailure as crash:
        pytest.fail(
            f"broken mutant {mutant.name}: {mutant.caught_by} met a dbt error it does not"
            f" expect (a crash, not a catch): {crash}"
        )
    pytest.fail(f"{mutant.name} ({mutant.bug}) passed {mutant.caught_by}: the proof missed it")


def test_every_check_catches_a_mutant_and_the_readme_lists_them() -> None:
    # no check in CHECKS without a seeded bug it must catch; the package README's table of
    # seeded bugs says what catches each, as MUTANTS does
    assert {mutant.caught_by for mutant in MUTANTS} == set(CHECKS)
    assert len({mutant.name for mutant in MUTANTS}) == len(MUTANTS) >= 20
    readme = (PACKAGE_ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `(\w+)` \| .* \| `(\w+)` \| `(\w+)` \|$", readme, re.MULTILINE))
    assert listed == {(mutant.name, mutant.caught_by, str(mutant.reason)) for mutant in MUTANTS}
