"""The proof has teeth: each bug below, seeded into a copy of the package, makes the package's
integration tests fail.

A mutant is a list of exact text replacements in the package's macros (each must match once,
so a mutant cannot silently stop applying when the code moves). Each is run against the
integration check that catches it (contract_harness.CHECKS), in a copy of its own; the test
fails if the check passes on the mutant. The table of what caught what is printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from contract_harness import CHECKS, PACKAGE_ROOT, Project, package_copy  # noqa: F401 (a fixture)

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str  # what a developer could plausibly get wrong
    replacements: tuple[tuple[str, str, str], ...]  # (macro file, exact text, replacement)
    caught_by: str  # the check of contract_harness.CHECKS that must fail


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
    ),
    Mutant(
        "reach_ignored",
        "a change's reach before its day is ignored when planning the days to recompute",
        (
            (
                "plan/_recomputed_days.sql",
                "{% set reach_before = '0 minutes' if reach.before == 'all' else reach.before %}",
                "{% set reach_before = '0 minutes' %}",
            ),
        ),
        "schedule_reach_edges",
    ),
    Mutant(
        "emptied_partition_kept",
        "recomputed partitions are overwritten instead of dropped and rewritten: a partition"
        " that comes out empty keeps its old rows",
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
            (
                "write/_write_partitions.sql",
                "insert into {{ this }} partition ({{ partition_column }})",
                "insert overwrite table {{ this }} partition ({{ partition_column }})",
            ),
        ),
        "schedule_reach_edges",
    ),
    Mutant(
        "fingerprint_blind",
        "the SQL fingerprint ignores the SQL: a run with nothing new skips the column check of"
        " a model whose columns changed",
        (("write/_sql_fingerprint.sql", "local_md5(shape)", "local_md5('')"),),
        "column_change",
    ),
    Mutant(
        "history_not_consulted",
        "before_new_batches() sees no earlier batch: a redelivery is taken for a new event",
        (("predicates/before_new_batches.sql", "< {{ kappa._first_new_batch() }}", "< 1"),),
        "schedule_shuffled",
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
    ),
    Mutant(
        "bucket_dropped",
        "a touched key bucket (bucket 0) is left out of the plan",
        (
            (
                "plan/_recomputed_buckets.sql",
                "where bucket is not null",
                "where bucket is not null and bucket != 0",
            ),
        ),
        "schedule_reach_edges",
    ),
    Mutant(
        "day_dropped",
        "the last touched day is left out of the plan",
        (
            (
                "plan/_recomputed_days.sql",
                "{% set days = run_query(days_query).columns[0].values() | list %}",
                "{% set days = (run_query(days_query).columns[0].values() | list)[:-1] %}",
            ),
        ),
        "schedule_shuffled",
    ),
    Mutant(
        "day_parent_not_traced",
        "a days parent's run that consumed exactly the child's first new batch is not traced",
        (
            (
                "plan/_recomputed_days.sql",
                '"\' and last_batch_id >= " ~ first_batch_id ~ ")"',
                '"\' and last_batch_id > " ~ first_batch_id ~ ")"',
            ),
        ),
        "schedule_reach_edges",
    ),
    Mutant(
        "key_parent_not_traced",
        "a keys parent's run that consumed exactly the child's first new batch is not traced",
        (
            (
                "plan/_recomputed_buckets.sql",
                '"\' and last_batch_id >= " ~ first_batch_id ~ ")"',
                '"\' and last_batch_id > " ~ first_batch_id ~ ")"',
            ),
        ),
        "schedule_shuffled",
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
    ),
    Mutant(
        "changed_columns_appended",
        "a model whose columns changed is appended to",
        (("write/_check_model_columns.sql", "{%- if differences -%}", "{%- if false -%}"),),
        "column_change",
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
    project.dbt(["parse", "--quiet"], schema="unused")  # the mutant is valid dbt
    try:
        CHECKS[mutant.caught_by](project)
    except AssertionError as caught:
        said = (str(caught).strip() or type(caught).__name__).splitlines()[0]
        print(f"{mutant.name}: caught by {mutant.caught_by}: {said[:200]}")
        return
    pytest.fail(f"{mutant.name} ({mutant.bug}) passed {mutant.caught_by}: the proof missed it")
