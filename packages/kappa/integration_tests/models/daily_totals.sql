-- days mode: one row per UTC day
{{ config(partition_by=['event_date'], event_time='day_start') }}

with

events as (
    select * from {{ ref('stg_events') }}
    where {{ kappa.in_recomputed_days('event_at') }}
),

final as (
    select
        cast(to_date(event_at) as timestamp) as day_start,
        count(*) as events,
        sum(amount) as amount,
        to_date(event_at) as event_date
    from events
    group by to_date(event_at)
)

select * from final
