"""Serving: readers query stable names (a view per model) on one version of every model.
The registry of versions, the main build that keeps the served version current, reprocessing
beside it and the switch, rollback.

Imports only `proof`, `ingest`, `log` and `runtime` below it.
"""
