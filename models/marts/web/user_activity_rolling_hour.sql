{{ config(
    partition_by=['activity_date'],
    event_time='occurred_at',
    input_reach={'before': '1 hour'},
) }}

with

activity as (
    select * from {{ ref('int_user_activity_sessionized') }}
    where {{ kappa.in_recomputed_days('occurred_at', parent='int_user_activity_sessionized') }}
),

rolling as (
    select
        activity_event_id,
        user_id,
        event_type,
        occurred_at,
        activity_date,
        count(*) over last_hour as events_in_last_hour,
        count_if(event_type = 'page_view') over last_hour as page_views_in_last_hour,
        count_if(event_type = 'search') over last_hour as searches_in_last_hour
    from activity
    window last_hour as ({{ sliding_window('user_id', 'occurred_at', '1 hour') }})
),

final as (
    select
        -- ids
        activity_event_id,
        user_id,
        -- attributes
        event_type,
        events_in_last_hour,
        page_views_in_last_hour,
        searches_in_last_hour,
        -- timestamps
        occurred_at,
        activity_date
    from rolling
    -- the hour before a recomputed day is read only to fill its first hour's windows
    where {{ kappa.is_recomputed_day('activity_date') }}
)

select * from final
