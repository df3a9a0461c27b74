with

accepted_events as (
    {%- for topic, stream in var('log_streams').items() %}
        select
            '{{ topic }}' as topic,
            occurred_at,
            _ingestion_batch_id
        from {{ ref(stream['staged_model']) }}
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

new_events as (
    select * from accepted_events
    where {{ kappa.in_new_batches('_ingestion_batch_id') }}
),

batch_newest as (
    select
        topic,
        _ingestion_batch_id,
        max(occurred_at) as newest_occurred_at
    from new_events
    group by topic, _ingestion_batch_id
),

earlier_newest as (
    -- the newest event time of each topic before the new batches: the watermark they start
    -- from. Read from this table's own rows of those batches (each bucket keeps the newest
    -- event time of its events), not from every earlier event, so the cost follows the new
    -- batches, not the log. A full refresh has no earlier batches (the filter keeps nothing).
    select
        topic,
        max(newest_occurred_at) as newest_occurred_at
    from {{ this if kappa.is_incremental() else 'batch_newest' }}
    where {{ kappa.before_new_batches('_ingestion_batch_id') }}
    group by topic
),

watermarks as (
    -- a batch's watermark: the newest event time of its topic in every earlier batch
    select
        batch_newest.topic,
        batch_newest._ingestion_batch_id,
        greatest(
            earlier_newest.newest_occurred_at,
            max(batch_newest.newest_occurred_at) over (
                partition by batch_newest.topic
                order by batch_newest._ingestion_batch_id
                rows between unbounded preceding and 1 preceding
            )
        ) as watermark
    from batch_newest
    left join earlier_newest
        on batch_newest.topic = earlier_newest.topic
),

lateness as (
    select
        new_events.topic,
        new_events._ingestion_batch_id,
        watermarks.watermark,
        case
            when watermarks.watermark is null or new_events.occurred_at >= watermarks.watermark
                then 0
            else unix_millis(watermarks.watermark) - unix_millis(new_events.occurred_at)
        end as lateness_millis,
        new_events.occurred_at
    from new_events
    inner join watermarks
        on
            new_events.topic = watermarks.topic
            and new_events._ingestion_batch_id = watermarks._ingestion_batch_id
),

bucketed as (
    select
        *,
        case
            when lateness_millis = 0 then 0
            when lateness_millis < 60 * 1000 then 1
            when lateness_millis < 10 * 60 * 1000 then 2
            when lateness_millis < 60 * 60 * 1000 then 3
            when lateness_millis < 6 * 60 * 60 * 1000 then 4
            when lateness_millis < 24 * 60 * 60 * 1000 then 5
            when lateness_millis < 7 * 24 * 60 * 60 * 1000 then 6
            else 7
        end as lateness_bucket_order
    from lateness
),

final as (
    select
        -- attributes
        topic,
        lateness_bucket_order,
        element_at(
            array(
                'on_time', 'under_1_minute', '1_to_10_minutes', '10_to_60_minutes',
                '1_to_6_hours', '6_to_24_hours', '1_to_7_days', 'over_7_days'
            ),
            lateness_bucket_order + 1
        ) as lateness_bucket,
        count(*) as events,
        max(lateness_millis) div 1000 as max_lateness_seconds,
        -- timestamps
        max(watermark) as watermark_at,
        max(occurred_at) as newest_occurred_at,
        -- pipeline metadata
        _ingestion_batch_id
    from bucketed
    group by _ingestion_batch_id, topic, lateness_bucket_order
)

select * from final
