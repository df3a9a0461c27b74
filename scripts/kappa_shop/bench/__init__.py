"""The benchmark: what an incremental run costs against a full refresh, and what the usual
alternatives (dbt's microbatch, a lookback) cost and miss. Its runner, the /proc sampler of
memory and CPU, the report and chart, the hand-written floor and the equality checks.

Imports only the wings below it (never `ops`: it starts no cluster or broker).
"""
