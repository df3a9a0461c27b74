-- A user's consecutive sessions are more than the inactivity gap apart, unless the later one
-- starts in a new block (sessions are cut at the block edges, midnight UTC by default).
-- Fails with every pair of consecutive sessions that should have been one.
with

sessions as (
    select * from {{ ref('sessions') }}
),

consecutive as (
    select
        user_id,
        session_id,
        session_started_at,
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
    and {{ session_cut('next_session_started_at', var('session_max_length_hours')) }}
    = {{ session_cut('session_started_at', var('session_max_length_hours')) }}
