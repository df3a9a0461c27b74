-- Every staged page view lands in exactly one session: page_views holds each of them once,
-- inside the bounds of its session (same user), and per user the sessions' page view counts
-- add up to the staged views. Fails with every user for whom any of this does not hold.
with

staged_views as (
    select
        web_event_id as page_view_id,
        user_id
    from {{ ref('stg_web__events') }}
    where event_type = 'page_view'
),

page_views as (
    select * from {{ ref('page_views') }}
),

sessions as (
    select * from {{ ref('sessions') }}
),

views_in_their_session as (
    select
        staged_views.user_id,
        count(*) as staged_view_count,
        count(sessions.session_id) as views_in_session_count,
        count(distinct page_views.page_view_id) as distinct_view_count,
        count(page_views.page_view_id) as view_row_count
    from staged_views
    left join page_views
        on staged_views.page_view_id = page_views.page_view_id
    left join sessions
        on
            page_views.session_id = sessions.session_id
            and page_views.user_id = sessions.user_id
            and page_views.viewed_at between sessions.session_started_at and sessions.session_ended_at
    group by staged_views.user_id
),

session_totals as (
    select
        user_id,
        sum(page_view_count) as session_view_count
    from sessions
    group by user_id
)

select
    coalesce(views_in_their_session.user_id, session_totals.user_id) as user_id,
    views_in_their_session.staged_view_count,
    views_in_their_session.views_in_session_count,
    session_totals.session_view_count
from views_in_their_session
full outer join session_totals
    on views_in_their_session.user_id = session_totals.user_id
where
    coalesce(views_in_their_session.staged_view_count, 0) != coalesce(session_totals.session_view_count, 0)
    or views_in_their_session.staged_view_count != views_in_their_session.views_in_session_count
    or views_in_their_session.staged_view_count != views_in_their_session.distinct_view_count
    or views_in_their_session.staged_view_count != views_in_their_session.view_row_count
