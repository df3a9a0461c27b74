-- A user's consecutive sessions are more than the inactivity gap apart (so they never overlap).
-- Fails with every pair of consecutive sessions that is too close.
with

sessions as (
    select * from {{ ref('sessions') }}
),

consecutive as (
    select
        user_id,
        session_id,
        session_ended_at,
        lead(session_started_at) over (
            partition by user_id order by session_started_at
        ) as next_session_started_at
    from sessions
)

select *
from consecutive
where
    next_session_started_at is not null
    and unix_millis(next_session_started_at) - unix_millis(session_ended_at)
    <= {{ var("session_inactivity_gap_minutes") }} * 60 * 1000
