"""Ingestion: the log (landed files or Kafka topics) into append-only raw tables, exactly once,
by a Spark Structured Streaming query with a checkpoint.

Imports only `log` and `runtime` below it.
"""
