"""The benchmark's floor: a hand-written PySpark job that computes sessions and the daily order
aggregate straight from the raw tables, with the project's rules (first valid delivery of an
event id wins; sessions by inactivity gap, cut at midnight UTC; the orders_daily metrics), and
none of dbt's or the exactness contract's machinery: no ledger, no staging tables, no
quarantine, no tests.

It assumes a log without malformed records or conflicting redeliveries (the benchmark's log):
what it does not classify, it does not need to. `kappa-shop bench` checks its output against
the dbt tables, so the comparison is between two jobs that compute the same thing.
"""

from __future__ import annotations

from typing import Any

ACTIVITY_TOPICS = {
    # topic -> the activity event type it gives (None: the record's own event_type)
    "web_events": None,
    "searches": "search",
    "search_clicks": "search_result_click",
}


def accepted_events(spark: Any, raw_schema: str, topic: str) -> Any:
    """The first delivery of each event id of a topic's raw table, parsed."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    envelope = (
        "struct<event_id:string, event_type:string, event_time:string, partition:int, "
        "offset:bigint, payload:struct<user_id:string, amount:decimal(12,2)>>"
    )
    parsed = spark.table(f"{raw_schema}.raw_{topic}").select(
        F.from_json("raw_record", envelope).alias("record"),
        "_source_file",
        "_ingestion_batch_id",
    )
    delivery_order = Window.partitionBy("record.event_id").orderBy(
        "_ingestion_batch_id", "record.partition", "record.offset", "_source_file"
    )
    first = (
        parsed.withColumn("delivery_rank", F.row_number().over(delivery_order))
        .where("delivery_rank = 1")
        .select("record.*")
    )
    return first.select(
        "event_id",
        "event_type",
        F.col("payload.user_id").alias("user_id"),
        F.col("payload.amount").alias("amount"),
        F.to_timestamp("event_time", "yyyy-MM-dd'T'HH:mm:ss.SSSX").alias("occurred_at"),
    )


def sessions(spark: Any, raw_schema: str, gap_minutes: int, max_length_hours: int) -> Any:
    """One row per session: user, first and last event, event count."""
    from functools import reduce

    from pyspark.sql import functions as F

    activity = reduce(
        lambda left, right: left.unionByName(right),
        [
            accepted_events(spark, raw_schema, topic).select(
                "user_id",
                "occurred_at",
                (F.col("event_type") if kind is None else F.lit(kind)).alias("event_type"),
            )
            for topic, kind in ACTIVITY_TOPICS.items()
        ],
    )
    block_seconds = max_length_hours * 3600
    block = F.timestamp_seconds(
        F.floor(F.unix_seconds("occurred_at") / block_seconds) * block_seconds
    )
    return (
        activity.groupBy(
            "user_id", block, F.session_window("occurred_at", f"{gap_minutes} minutes")
        )
        .agg(
            F.min("occurred_at").alias("session_started_at"),
            F.max("occurred_at").alias("session_ended_at"),
            F.count("*").alias("event_count"),
        )
        .select("user_id", "session_started_at", "session_ended_at", "event_count")
    )


def orders_daily(spark: Any, raw_schema: str) -> Any:
    """orders_daily's metrics per day of the order events."""
    from pyspark.sql import functions as F

    events = accepted_events(spark, raw_schema, "order_events")
    paid = F.col("event_type") == "order_paid"

    def count_of(event_type: str) -> Any:
        return F.count_if(F.col("event_type") == event_type)

    return events.groupBy(F.to_date("occurred_at").alias("order_date")).agg(
        count_of("order_placed").alias("orders_placed_count"),
        count_of("order_paid").alias("orders_paid_count"),
        count_of("payment_failed").alias("payment_failures_count"),
        count_of("order_shipped").alias("orders_shipped_count"),
        count_of("order_cancelled").alias("orders_cancelled_count"),
        F.coalesce(F.sum(F.when(paid, F.col("amount"))), F.lit(0)).alias("revenue"),
        F.count_distinct(F.when(paid, F.col("user_id"))).alias("paying_customer_count"),
    )


def run(
    spark: Any, raw_schema: str, out_schema: str, gap_minutes: int, max_length_hours: int
) -> None:
    """Compute both and write them as parquet tables `<out_schema>.sessions` and
    `<out_schema>.orders_daily` (replaced)."""
    spark.sql(f"create schema if not exists {out_schema}")
    outputs = {
        "sessions": sessions(spark, raw_schema, gap_minutes, max_length_hours),
        "orders_daily": orders_daily(spark, raw_schema),
    }
    for name, frame in outputs.items():
        frame.write.mode("overwrite").format("parquet").saveAsTable(f"{out_schema}.{name}")
