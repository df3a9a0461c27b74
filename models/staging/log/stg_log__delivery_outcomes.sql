with

outcomes as (
    {%- for topic, stream in var('log_streams').items() %}
        select
            topic,
            outcome,
            quarantine_reason,
            _ingestion_batch_id
        from {{ ref(stream['deliveries_model']) }}
        where {{ kappa.in_new_batches('_ingestion_batch_id') }}
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

final as (
    select
        -- attributes
        topic,
        outcome,
        coalesce(quarantine_reason, 'none') as quarantine_reason,
        count(*) as deliveries,
        -- pipeline metadata
        _ingestion_batch_id
    from outcomes
    group by _ingestion_batch_id, topic, outcome, coalesce(quarantine_reason, 'none')
)

select * from final
