{% macro delivery_outcomes(new_deliveries, earlier_deliveries, new_event_ids) %}
    {#- The outcome of every delivery in `new_deliveries` (the name of a CTE of staged deliveries
        of the new ingestion batches): `accepted` (the first valid delivery of its event_id),
        `duplicate` (a later valid delivery with the same content), `conflicting_duplicate` (a
        later valid delivery with different content) or `malformed` (invalid_reason says why),
        with `quarantine_reason`. "First" is the lowest (ingestion batch, log partition, log
        offset, source file): a total order, so the choice never depends on chance. New
        deliveries are ranked together with the earlier valid deliveries of the same event ids
        in `earlier_deliveries` (the deliveries model's own table; none on a full refresh), so
        a run over the new batches decides exactly what a full refresh decides. History is
        selected by `new_event_ids` (the name of a CTE with an `event_id` column): any superset
        of the ids of the new valid deliveries, read more cheaply than they are staged (an id
        without a new valid delivery selects history that the ranking leaves unused). Returns
        every column of `new_deliveries`, then `outcome` and `quarantine_reason`. -#}
with

earlier_valid_deliveries as (
    -- only what ranking reads: the one scan of history reads these narrow columns of the
    -- earlier valid deliveries of the new event ids, never their raw records and payloads
    select
        event_id,
        content_hash,
        log_partition,
        log_offset,
        _source_file,
        _ingestion_batch_id
    {%- if earlier_deliveries is not none %}
    from {{ earlier_deliveries }}
    where
        invalid_reason is null
        and {{ kappa.before_new_batches('_ingestion_batch_id') }}
        and event_id in (select {{ new_event_ids }}.event_id from {{ new_event_ids }})
    {%- else %}
    from {{ new_deliveries }}
    where false
    {%- endif %}
),

ranked as (
    -- one pass over the new deliveries (each travels whole as one struct; null for an earlier
    -- one): valid deliveries are ranked per event id with the earlier ones, a malformed one
    -- only with malformed ones of its id, whose rank decides nothing
    select
        delivery,
        is_valid,
        content_hash,
        row_number() over delivery_order as delivery_rank,
        first_value(content_hash) over delivery_order as first_content_hash
    from (
        select
            struct({{ new_deliveries }}.*) as delivery,
            event_id,
            invalid_reason is null as is_valid,
            content_hash,
            log_partition,
            log_offset,
            _source_file,
            _ingestion_batch_id
        from {{ new_deliveries }}
        union all
        select
            null as delivery,
            event_id,
            true as is_valid,
            content_hash,
            log_partition,
            log_offset,
            _source_file,
            _ingestion_batch_id
        from earlier_valid_deliveries
    )
    window delivery_order as (
        partition by event_id, is_valid
        order by _ingestion_batch_id, log_partition, log_offset, _source_file
    )
),

outcomes as (
    select
        delivery,
        case
            when not is_valid then 'malformed'
            when delivery_rank = 1 then 'accepted'
            when content_hash = first_content_hash then 'duplicate'
            else 'conflicting_duplicate'
        end as outcome
    from ranked
    where delivery is not null
),

final as (
    select
        delivery.*,
        outcome,
        case
            when outcome = 'malformed' then delivery.invalid_reason
            when outcome = 'conflicting_duplicate' then 'conflicting_duplicate'
        end as quarantine_reason
    from outcomes
)

select * from final
{%- endmacro %}
