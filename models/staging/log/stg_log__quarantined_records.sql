with

quarantined as (
    {%- for topic, stream in var('log_streams').items() %}
        select
            topic,
            event_id,
            event_type,
            quarantine_reason,
            raw_record,
            log_partition,
            log_offset,
            _source_file,
            _ingested_at,
            _ingestion_batch_id
        from {{ ref(stream['deliveries_model']) }}
        where
            {{ kappa.in_new_batches('_ingestion_batch_id') }}
            and outcome in ('malformed', 'conflicting_duplicate')
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

final as (
    select
        -- ids
        event_id,
        -- attributes
        topic,
        event_type,
        quarantine_reason,
        raw_record,
        -- pipeline metadata
        log_partition as _log_partition,
        log_offset as _log_offset,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from quarantined
)

select * from final
