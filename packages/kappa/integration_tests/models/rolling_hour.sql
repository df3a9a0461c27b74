-- days mode with a reach both ways: each event with the user's events of the hour before it
-- and of the hour after it, so a day reads the last hour of the day before and the first hour
-- of the day after
{{ config(
    partition_by=['event_date'], event_time='event_at',
    input_reach={'before': '1 hour', 'after': '1 hour'}
) }}

with

events as (
    select * from {{ ref('stg_events') }}
    where {{ kappa.in_recomputed_days('event_at') }}
),

counted as (
    select
        event_id,
        user_id,
        event_at,
        count(*) over (
            partition by user_id order by event_at
            range between interval 1 hour preceding and current row
        ) as events_in_last_hour,
        count(*) over (
            partition by user_id order by event_at
            range between current row and interval 1 hour following
        ) as events_in_next_hour,
        to_date(event_at) as event_date
    from events
),

final as (
    select * from counted
    where {{ kappa.is_recomputed_day('event_date') }}
)

select * from final
