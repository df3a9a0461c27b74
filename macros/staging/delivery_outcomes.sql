{% macro delivery_outcomes(deliveries_relation) %}
    {#- The outcome of every delivery of the new ingestion batches in `deliveries_relation` (a
        stage_deliveries model): `accepted` (the first valid delivery of its event_id),
        `duplicate` (a later valid delivery with the same content), `conflicting_duplicate`
        (a later valid delivery with different content) or `malformed` (invalid_reason says
        why). "First" is the lowest (ingestion batch, log partition, log offset, source file):
        a total order, so the choice never depends on chance. New deliveries are ranked
        together with the earlier deliveries of the same event ids, so a run over the new
        batches decides exactly what a full refresh decides. -#}
with

new_deliveries as (
    select * from {{ deliveries_relation }}
    where {{ in_new_batches('_ingestion_batch_id') }}
),

new_valid_deliveries as (
    select * from new_deliveries
    where invalid_reason is null
),

earlier_valid_deliveries as (
    -- only what ranking reads: the scan of history then reads these narrow columns, never the
    -- raw records and payloads of earlier deliveries (those rows are ranked, then left out)
    select
        cast(null as string) as topic,
        event_id,
        cast(null as string) as event_type,
        cast(null as string) as partition_key,
        cast(null as variant) as payload,
        content_hash,
        cast(null as string) as raw_record,
        cast(null as timestamp) as occurred_at,
        log_partition,
        log_offset,
        _source_file,
        cast(null as timestamp) as _ingested_at,
        _ingestion_batch_id
    from {{ deliveries_relation }}
    where
        invalid_reason is null
        and {{ before_new_batches('_ingestion_batch_id') }}
        and event_id in (select new_valid_deliveries.event_id from new_valid_deliveries)
),

ranked as (
    select
        *,
        row_number() over delivery_order as delivery_rank,
        first_value(content_hash) over delivery_order as first_content_hash
    from (
        select
            topic,
            event_id,
            event_type,
            partition_key,
            payload,
            content_hash,
            raw_record,
            occurred_at,
            log_partition,
            log_offset,
            _source_file,
            _ingested_at,
            _ingestion_batch_id
        from new_valid_deliveries
        union all
        select * from earlier_valid_deliveries
    )
    window delivery_order as (
        partition by event_id
        order by _ingestion_batch_id, log_partition, log_offset, _source_file
    )
),

valid_outcomes as (
    select
        *,
        case
            when delivery_rank = 1 then 'accepted'
            when content_hash = first_content_hash then 'duplicate'
            else 'conflicting_duplicate'
        end as outcome
    from ranked
    where {{ in_new_batches('_ingestion_batch_id') }}
),

final as (
    select
        topic,
        event_id,
        event_type,
        partition_key,
        payload,
        content_hash,
        outcome,
        case
            when outcome = 'conflicting_duplicate' then 'conflicting_duplicate'
        end as quarantine_reason,
        raw_record,
        occurred_at,
        log_partition,
        log_offset,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from valid_outcomes
    union all
    select
        topic,
        event_id,
        event_type,
        partition_key,
        payload,
        content_hash,
        'malformed' as outcome,
        invalid_reason as quarantine_reason,
        raw_record,
        occurred_at,
        log_partition,
        log_offset,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from new_deliveries
    where invalid_reason is not null
)

select * from final
{%- endmacro %}
