"""The proof: replay a generated log in random arrival schedules (batches overtaking each
other, redeliveries, reach-edge and old-day batches, an upstream model rebuilt alone) and diff
every incremental model against a full refresh of the same records.

Imports only `ingest`, `log` and `runtime` below it.
"""
