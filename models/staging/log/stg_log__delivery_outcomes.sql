with

outcomes as (
    {%- for topic, stream in var('log_streams').items() %}
        select
            topic,
            outcome,
            quarantine_reason,
            _ingestion_batch_id
        from ({{ delivery_outcomes(ref(stream['deliveries_model'])) }})
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
