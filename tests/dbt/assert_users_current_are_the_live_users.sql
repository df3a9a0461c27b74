-- users_current holds exactly the users whose latest change in log order (LSN) is not a
-- delete, one row each, at that change. Fails with every user where this does not hold.
with

latest_changes as (
    select
        user_id,
        max_by(profile_change_id, lsn) as latest_change_id,
        max_by(event_type, lsn) as latest_event_type
    from {{ ref('stg_users__profile_changes') }}
    group by user_id
),

live_users as (
    select * from latest_changes
    where latest_event_type != 'user_deleted'
),

current_users as (
    select * from {{ ref('users_current') }}
)

select
    coalesce(live_users.user_id, current_users.user_id) as user_id,
    live_users.latest_change_id,
    current_users.user_version_id
from live_users
full outer join current_users
    on live_users.user_id = current_users.user_id
where
    live_users.user_id is null
    or current_users.user_id is null
    or live_users.latest_change_id != current_users.user_version_id
