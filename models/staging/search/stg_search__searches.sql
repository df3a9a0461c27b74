with

deliveries as (
    select * from {{ ref('stg_search__search_deliveries') }}
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
        event_id as search_event_id,
        try_variant_get(payload, '$.search_id', 'string') as search_id,
        try_variant_get(payload, '$.user_id', 'string') as user_id,
        -- attributes
        try_variant_get(payload, '$.query', 'string') as search_query,
        try_variant_get(payload, '$.result_product_ids', 'array<string>') as result_product_ids,
        size(try_variant_get(payload, '$.result_product_ids', 'array<string>')) as result_count,
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
