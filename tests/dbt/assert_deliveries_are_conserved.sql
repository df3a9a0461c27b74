-- Conservation, per ingestion batch and topic: every raw row is accounted for exactly once, as
-- an accepted event, a duplicate, or a quarantined record:
--   raw rows = accepted + duplicates + quarantined (malformed + conflicting duplicates)
-- checked across the raw tables, the accepted-event models, the quarantine model and the
-- outcome ledger. Fails with every batch and topic where any of them disagree.
with

raw_rows as (
    {%- for topic, stream in var('log_streams').items() %}
        {%- set source_name, table_name = stream['source'].split('.') %}
        select
            '{{ topic }}' as topic,
            _ingestion_batch_id,
            count(*) as raw_rows
        from {{ source(source_name, table_name) }}
        -- only the batches the models have consumed so far
        where _ingestion_batch_id <= {{ kappa.consumed_through(ref('stg_log__delivery_outcomes')) }}
        group by _ingestion_batch_id
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

accepted_rows as (
    {%- for topic, stream in var('log_streams').items() %}
        select
            '{{ topic }}' as topic,
            _ingestion_batch_id,
            count(*) as accepted_rows
        from {{ ref(stream['staged_model']) }}
        group by _ingestion_batch_id
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

quarantined_rows as (
    select
        topic,
        _ingestion_batch_id,
        count(*) as quarantined_rows
    from {{ ref('stg_log__quarantined_records') }}
    group by topic, _ingestion_batch_id
),

outcome_totals as (
    select
        topic,
        _ingestion_batch_id,
        sum(deliveries) as deliveries,
        sum(case when outcome = 'accepted' then deliveries else 0 end) as accepted,
        sum(case when outcome = 'duplicate' then deliveries else 0 end) as duplicates,
        sum(
            case when outcome in ('malformed', 'conflicting_duplicate') then deliveries else 0 end
        ) as quarantined
    from {{ ref('stg_log__delivery_outcomes') }}
    group by topic, _ingestion_batch_id
),

compared as (
    select
        raw_rows.topic,
        raw_rows._ingestion_batch_id,
        raw_rows.raw_rows,
        coalesce(outcome_totals.deliveries, 0) as deliveries,
        coalesce(outcome_totals.accepted, 0) as accepted,
        coalesce(outcome_totals.duplicates, 0) as duplicates,
        coalesce(outcome_totals.quarantined, 0) as quarantined,
        coalesce(accepted_rows.accepted_rows, 0) as accepted_rows,
        coalesce(quarantined_rows.quarantined_rows, 0) as quarantined_rows
    from raw_rows
    left join outcome_totals
        on
            raw_rows.topic = outcome_totals.topic
            and raw_rows._ingestion_batch_id = outcome_totals._ingestion_batch_id
    left join accepted_rows
        on
            raw_rows.topic = accepted_rows.topic
            and raw_rows._ingestion_batch_id = accepted_rows._ingestion_batch_id
    left join quarantined_rows
        on
            raw_rows.topic = quarantined_rows.topic
            and raw_rows._ingestion_batch_id = quarantined_rows._ingestion_batch_id
)

select *
from compared
where
    raw_rows != accepted + duplicates + quarantined
    or raw_rows != deliveries
    or accepted != accepted_rows
    or quarantined != quarantined_rows
