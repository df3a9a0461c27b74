with

page_view_deliveries as (
    select * from {{ source('web', 'page_views') }}
),

typed as (
    select
        cast(event_id as string) as page_view_id,
        cast(user_id as string) as user_id,
        cast(page_path as string) as page_path,
        to_timestamp(occurred_at, 'yyyy-MM-dd HH:mm:ss') as viewed_at,
        to_timestamp(ingested_at, 'yyyy-MM-dd HH:mm:ss') as _ingested_at,
        cast(batch_id as bigint) as _batch_id
    from page_view_deliveries
),

ranked_deliveries as (
    -- a redelivered event keeps its first delivery: earliest batch, then earliest ingestion,
    -- then the remaining columns, so equal deliveries never tie by chance
    select
        *,
        row_number() over (
            partition by page_view_id
            order by _batch_id, _ingested_at, viewed_at, user_id, page_path
        ) as delivery_number
    from typed
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
        _ingested_at,
        _batch_id
    from ranked_deliveries
    where delivery_number = 1
)

select * from final
