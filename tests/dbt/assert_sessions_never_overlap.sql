-- A user's sessions never overlap: each starts after the previous one ended.
-- Fails with every pair of consecutive sessions of a user that overlap or touch.
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
where next_session_started_at <= session_ended_at
