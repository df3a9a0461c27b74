-- Hopping windows of 5 minutes every minute hold each activity event in exactly 5 (size /
-- slide) windows: the windows' event counts add up to five times the staged activity events.
-- Fails with one row showing both totals when they differ.
with

staged_activity as (
    select web_event_id as event_id from {{ ref('stg_web__events') }}
    union all
    select search_event_id as event_id from {{ ref('stg_search__searches') }}
    union all
    select search_click_id as event_id from {{ ref('stg_search__clicks') }}
),

totals as (
    select
        (select count(*) from staged_activity) as staged_activity_event_count,
        (
            select coalesce(sum(activity_event_count), 0)
            from {{ ref('active_users_per_5_minutes') }}
        ) as window_activity_event_count
)

select *
from totals
where window_activity_event_count != 5 * staged_activity_event_count
