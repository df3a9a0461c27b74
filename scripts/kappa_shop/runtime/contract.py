"""The names of what the kappa package (packages/kappa) keeps in every schema it builds into,
for the Python side that reads them: the batch ledger (one row per run of a model: the
ingestion batches it consumed, the partitions it rewrote) and the run lock. The package's macros
define them (`_batch_ledger`, `_run_lock_relation`); tests/pytest/test_layout.py checks that
these are the names the macros use."""

from __future__ import annotations

LEDGER_TABLE = "kappa_batch_ledger"
# the ledger's name in versions of the package before 2026-12-05; its first run renames it
EARLIER_LEDGER_TABLE = "kappa_consumed_batches"
RUN_LOCK_TABLE = "kappa_run_lock"
