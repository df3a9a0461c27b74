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
        "offset:bigint, payload:struct<user_id:string, amount:decimal(12,2), page_path:string>>"
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
        F.col("payload.page_path").alias("page_path"),
        F.to_timestamp("event_time", "yyyy-MM-dd'T'HH:mm:ss.SSSX").alias("occurred_at"),
    )


def sessions(spark: Any, raw_schema: str, gap_minutes: int, max_length_hours: int) -> Any:
    """One row per session, with every column of the sessions model: its id (md5 of user and
    start, as the surrogate_key macro makes it), first and last event, events by type, landing
    and exit page (ties on time broken by event id), the orders the user placed while it was
    live (from its start to one gap after its last event, before its block's edge), bounce and
    duration, its day."""
    from functools import reduce

    from pyspark.sql import functions as F

    activity = reduce(
        lambda left, right: left.unionByName(right),
        [
            accepted_events(spark, raw_schema, topic).select(
                "event_id",
                "user_id",
                "occurred_at",
                (F.col("event_type") if kind is None else F.lit(kind)).alias("event_type"),
                "page_path",
            )
            for topic, kind in ACTIVITY_TOPICS.items()
        ],
    )
    block_seconds = max_length_hours * 3600
    block = F.timestamp_seconds(
        F.floor(F.unix_seconds("occurred_at") / block_seconds) * block_seconds
    ).alias("block_starts_at")
    is_page_view = F.col("event_type") == "page_view"
    # a page view's place in the session: its time, then its event id
    page_view = F.when(is_page_view, F.struct("occurred_at", "event_id", "page_path"))

    def count_of(event_type: str) -> Any:
        return F.count_if(F.col("event_type") == event_type).alias(f"{event_type}_count")

    grouped = activity.groupBy(
        "user_id", block, F.session_window("occurred_at", f"{gap_minutes} minutes")
    ).agg(
        F.min("occurred_at").alias("session_started_at"),
        F.max("occurred_at").alias("session_ended_at"),
        F.count("*").alias("event_count"),
        count_of("page_view"),
        count_of("add_to_cart"),
        count_of("search"),
        count_of("search_result_click"),
        F.min(page_view)["page_path"].alias("landing_page_path"),
        F.max(page_view)["page_path"].alias("exit_page_path"),
    )
    session_id = F.md5(
        F.concat_ws(
            "-|-",
            *(
                F.coalesce(F.col(name).cast("string"), F.lit("_kappa_shop_null_"))
                for name in ("user_id", "session_started_at")
            ),
        )
    )
    spans = grouped.select(
        session_id.alias("session_id"),
        "*",
        (F.col("session_ended_at") + F.expr(f"interval {gap_minutes} minutes")).alias("live_until"),
        (F.col("block_starts_at") + F.expr(f"interval {max_length_hours} hours")).alias(
            "block_ends_at"
        ),
    )
    placed = (
        accepted_events(spark, raw_schema, "order_events")
        .where("event_type = 'order_placed'")
        .select(F.col("user_id").alias("order_user_id"), F.col("occurred_at").alias("placed_at"))
    )
    conversions = (
        spans.join(
            placed,
            (spans.user_id == placed.order_user_id)
            & (spans.session_started_at <= placed.placed_at)
            & (spans.live_until >= placed.placed_at)
            & (spans.block_ends_at > placed.placed_at),
        )
        .groupBy("session_id")
        .agg(F.count("*").alias("order_count"))
    )
    return spans.join(conversions, "session_id", "left").select(
        "session_id",
        "user_id",
        "landing_page_path",
        "exit_page_path",
        "event_count",
        F.col("page_view_count"),
        "add_to_cart_count",
        "search_count",
        F.col("search_result_click_count").alias("search_click_count"),
        F.coalesce("order_count", F.lit(0)).alias("order_count"),
        F.col("order_count").isNotNull().alias("is_converted"),
        (F.col("event_count") == 1).alias("is_bounce"),
        F.expr("(unix_millis(session_ended_at) - unix_millis(session_started_at)) div 1000").alias(
            "duration_seconds"
        ),
        "session_started_at",
        "session_ended_at",
        F.to_date("session_started_at").alias("session_date"),
    )


def orders_daily(spark: Any, raw_schema: str) -> Any:
    """orders_daily's metrics per day of the order events, its average paid order included."""
    from pyspark.sql import functions as F

    events = accepted_events(spark, raw_schema, "order_events")
    paid = F.col("event_type") == "order_paid"

    def count_of(event_type: str) -> Any:
        return F.count_if(F.col("event_type") == event_type)

    daily = events.groupBy(F.to_date("occurred_at").alias("order_date")).agg(
        count_of("order_placed").alias("orders_placed_count"),
        count_of("order_paid").alias("orders_paid_count"),
        count_of("payment_failed").alias("payment_failures_count"),
        count_of("order_shipped").alias("orders_shipped_count"),
        count_of("order_cancelled").alias("orders_cancelled_count"),
        F.coalesce(F.sum(F.when(paid, F.col("amount"))), F.lit(0)).alias("revenue"),
        F.count_distinct(F.when(paid, F.col("user_id"))).alias("paying_customer_count"),
    )
    paid_orders = F.when(F.col("orders_paid_count") != 0, F.col("orders_paid_count"))
    return daily.withColumn(
        "average_paid_order_value", (F.col("revenue") / paid_orders).cast("decimal(12,2)")
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
