-- Every staged page view lands in exactly one session: per user, the sessions' view counts add
-- up to the staged views, and every view falls inside one of the user's sessions.
-- Fails with every user whose counts differ or whose views fall outside (or in two) sessions.
with

page_views as (
    select
        web_event_id as page_view_id,
        user_id,
        occurred_at as viewed_at
    from {{ ref('stg_web__events') }}
    where event_type = 'page_view'
),

sessions as (
    select * from {{ ref('sessions') }}
),

views_per_session as (
    select
        page_views.page_view_id,
        page_views.user_id,
        count(sessions.session_id) as sessions_containing
    from page_views
    left join sessions
        on
            page_views.user_id = sessions.user_id
            and page_views.viewed_at between sessions.session_started_at and sessions.session_ended_at
    group by page_views.page_view_id, page_views.user_id
),

per_user as (
    select
        user_id,
        count(*) as staged_views,
        sum(case when sessions_containing = 1 then 1 else 0 end) as views_in_one_session
    from views_per_session
    group by user_id
),

session_totals as (
    select
        user_id,
        sum(page_view_count) as session_views
    from sessions
    group by user_id
)

select
    per_user.user_id,
    per_user.staged_views,
    per_user.views_in_one_session,
    session_totals.session_views
from per_user
full outer join session_totals
    on per_user.user_id = session_totals.user_id
where
    per_user.user_id is null
    or session_totals.user_id is null
    or per_user.staged_views != per_user.views_in_one_session
    or per_user.staged_views != session_totals.session_views
