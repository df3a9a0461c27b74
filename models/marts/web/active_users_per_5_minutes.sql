{{ config(
    partition_by=['window_date'],
    event_time='window_start',
    input_reach={'after': '4 minutes'},
) }}

with

activity as (
    select
        user_id,
        occurred_at
    from {{ ref('int_user_activity_sessionized') }}
    where {{ kappa.in_recomputed_days('occurred_at', parent='int_user_activity_sessionized') }}
),

hopping_windows as (
    -- every event is in the five windows that start in the five minutes up to it
    select
        {{ hopping_window('occurred_at', '5 minutes', '1 minute') }}.start as window_start,
        count(*) as activity_event_count,
        count(distinct user_id) as active_user_count
    from activity
    group by {{ hopping_window('occurred_at', '5 minutes', '1 minute') }}
),

final as (
    select
        -- timestamps
        window_start,
        window_start + interval 5 minutes as window_end,
        -- measures
        active_user_count,
        activity_event_count,
        to_date(window_start) as window_date
    from hopping_windows
    -- a recomputed day's last windows read up to four minutes into the next day; the
    -- previous day's last windows, half-seen here, are not recomputed
    where {{ kappa.is_recomputed_day('to_date(window_start)') }}
)

select * from final
