with

deliveries as (
    select * from {{ ref('stg_users__profile_change_deliveries') }}
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
        event_id as profile_change_id,
        try_variant_get(payload, '$.user_id', 'string') as user_id,
        -- attributes
        event_type,
        try_variant_get(payload, '$.lsn', 'bigint') as lsn,
        try_variant_get(payload, '$.email', 'string') as email,
        try_variant_get(payload, '$.country', 'string') as country,
        try_variant_get(payload, '$.tier', 'string') as tier,
        -- timestamps
        occurred_at,
        -- pipeline metadata
        log_partition as _log_partition,
        log_offset as _log_offset,
        _ingested_at,
        _ingestion_batch_id
    from accepted
)

select * from final
