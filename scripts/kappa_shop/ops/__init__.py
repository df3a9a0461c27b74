"""Operations: a local Spark cluster and a local Kafka broker on 127.0.0.1, and the chaos
campaign that kills the pipeline's steps at random moments and checks that nothing was lost,
doubled or changed.

Imports only the wings below it (`serving`, `proof`, `ingest`, `log`, `runtime`).
"""
