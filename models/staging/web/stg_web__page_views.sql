with

web_event_deliveries as (
    select * from {{ source('web', 'events') }}
),

parsed as (
    -- VARIANT keeps each value's JSON type, so a number where text belongs is caught
    select
        try_parse_json(raw_record) as record,
        octet_length(raw_record) as record_bytes,
        _ingested_at,
        _ingestion_batch_id
    from web_event_deliveries
),

page_view_deliveries as (
    select
        variant_get(record, '$.event_id', 'string') as page_view_id,
        variant_get(record, '$.payload.user_id', 'string') as user_id,
        variant_get(record, '$.payload.page_path', 'string') as page_path,
        to_timestamp(
            variant_get(record, '$.event_time', 'string'), "yyyy-MM-dd'T'HH:mm:ss.SSSX"
        ) as viewed_at,
        variant_get(record, '$.partition', 'int') as log_partition,
        variant_get(record, '$.offset', 'bigint') as log_offset,
        (
            schema_of_variant(variant_get(record, '$.key')) = 'STRING'
            and schema_of_variant(variant_get(record, '$.event_id')) = 'STRING'
            and schema_of_variant(variant_get(record, '$.payload.user_id')) = 'STRING'
            and schema_of_variant(variant_get(record, '$.payload.page_path')) = 'STRING'
        ) as has_expected_types,
        record_bytes,
        _ingested_at,
        _ingestion_batch_id
    from parsed
    where variant_get(record, '$.event_type', 'string') = 'page_view'
),

valid_deliveries as (
    -- the validity rules stated in stg_web__page_views.yml
    select *
    from page_view_deliveries
    where
        has_expected_types
        and viewed_at >= timestamp '1970-01-01 00:00:00'
        and viewed_at < timestamp '2100-01-01 00:00:00'
        and record_bytes <= {{ var("max_record_bytes") }}
),

ranked_deliveries as (
    -- a redelivered event keeps its first delivery: earliest ingestion batch, then its place in
    -- the log (partition, offset), which no two deliveries share
    select
        *,
        row_number() over (
            partition by page_view_id
            order by _ingestion_batch_id, log_partition, log_offset
        ) as delivery_number
    from valid_deliveries
),

final as (
    select
        -- ids
        page_view_id,
        user_id,
        -- attributes
        page_path,
        -- timestamps
        viewed_at,
        -- pipeline metadata
        log_partition as _log_partition,
        log_offset as _log_offset,
        _ingested_at,
        _ingestion_batch_id
    from ranked_deliveries
    where delivery_number = 1
)

select * from final
