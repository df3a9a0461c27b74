-- batches mode: each event once, from its first delivery; a redelivery in a later batch is
-- recognised from the batches already consumed
{{ config(partition_by=['_ingestion_batch_id'], event_time='event_at') }}

with

new_deliveries as (
    select * from {{ source('log', 'raw_events') }}
    where {{ kappa.in_new_batches('_ingestion_batch_id') }}
),

earlier_deliveries as (
    select distinct event_id from {{ source('log', 'raw_events') }}
    where {{ kappa.before_new_batches('_ingestion_batch_id') }}
),

ranked as (
    select
        new_deliveries.*,
        row_number() over (
            partition by new_deliveries.event_id
            order by new_deliveries._ingestion_batch_id, new_deliveries.amount
        ) as delivery_rank
    from new_deliveries
    left anti join earlier_deliveries
        on new_deliveries.event_id = earlier_deliveries.event_id
),

final as (
    select event_id, user_id, kind, event_at, amount {{ ', 1 as added_column' if var('add_column', false) }}, _ingestion_batch_id
    from ranked
    where delivery_rank = 1
)

select * from final
