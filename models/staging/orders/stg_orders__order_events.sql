with

deliveries as (
    select * from {{ ref('stg_orders__order_event_deliveries') }}
    where {{ kappa.in_new_batches('_ingestion_batch_id') }}
),

accepted as (
    -- the first valid delivery of each event id (its deliveries model decided the outcome)
    select {{ delivered_columns() }} from deliveries
    where outcome = 'accepted'
),

final as (
    select
        -- ids
        event_id as order_event_id,
        try_variant_get(payload, '$.order_id', 'string') as order_id,
        try_variant_get(payload, '$.user_id', 'string') as user_id,
        -- attributes
        event_type,
        try_variant_get(payload, '$.amount', 'decimal(12, 2)') as amount,
        try_variant_get(payload, '$.currency', 'string') as currency,
        try_variant_get(
            payload, '$.items', 'array<struct<product_id: string, quantity: int, unit_price: decimal(12, 2)>>'
        ) as order_items,
        try_variant_get(payload, '$.reason', 'string') as reason,
        try_variant_get(payload, '$.carrier', 'string') as carrier,
        -- timestamps
        occurred_at,
        -- pipeline metadata
        log_partition as _log_partition,
        log_offset as _log_offset,
        _ingested_at,
        _ingestion_batch_id
    from accepted
)

-- clustered by event time within each batch: the day models read this table by event time, and
-- parquet's statistics then skip the files of the other days (docs/benchmarks.md)
select * from final
order by _ingestion_batch_id, occurred_at
