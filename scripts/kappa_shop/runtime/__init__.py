"""The runtime: what every job runs on. Java and the process environment, the embedded
SparkSession and its settings, dbt invoked in this process, SQL on a target's tables (embedded or
through a Thrift Server), Delta's jars, Maven and Ivy, a Kafka client, processes and ports on this
machine, and the opt-in fast start.

The ground floor: imports only `kappa_shop.errors`.
"""
