{{ config(
    partition_by=['activity_date'],
    event_time='occurred_at',
) }}

with

web_events as (
    select
        web_event_id as activity_event_id,
        user_id,
        event_type,
        page_path,
        occurred_at
    from {{ ref('stg_web__events') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

searches as (
    select
        search_event_id as activity_event_id,
        user_id,
        'search' as event_type,
        cast(null as string) as page_path,
        occurred_at
    from {{ ref('stg_search__searches') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

search_clicks as (
    select
        search_click_id as activity_event_id,
        user_id,
        'search_result_click' as event_type,
        cast(null as string) as page_path,
        occurred_at
    from {{ ref('stg_search__clicks') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

activity as (
    select * from web_events
    union all
    select * from searches
    union all
    select * from search_clicks
),

session_bounds as (
    -- a user's events form one session while each follows the previous by at most the gap;
    -- sessions are cut at fixed block edges (midnight UTC by default)
    select
        user_id,
        min(occurred_at) as session_started_at,
        max(occurred_at) as session_ended_at
    from activity
    group by
        user_id,
        {{ bounded_session_window(
            'occurred_at', var('session_inactivity_gap_minutes'), var('session_max_length_hours')
        ) }}
),

final as (
    select
        -- ids
        activity.activity_event_id,
        {{ surrogate_key(['session_bounds.user_id', 'session_bounds.session_started_at']) }} as session_id,
        activity.user_id,
        -- attributes
        activity.event_type,
        activity.page_path,
        -- timestamps
        activity.occurred_at,
        session_bounds.session_started_at,
        session_bounds.session_ended_at,
        to_date(activity.occurred_at) as activity_date
    from activity
    inner join session_bounds
        on
            activity.user_id = session_bounds.user_id
            and activity.occurred_at
            between session_bounds.session_started_at and session_bounds.session_ended_at
)

select * from final
