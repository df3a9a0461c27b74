-- A user's versions never overlap and tile time from creation to deletion: each version ends
-- (valid_to) no earlier than it starts, exactly where the user's next version starts unless a
-- delete ended it, and only the last version may be current. Fails with every bad pair.
with

versions as (
    select
        user_id,
        user_version_id,
        lsn,
        valid_from,
        valid_to,
        is_current,
        is_ended_by_delete,
        lead(valid_from) over (partition by user_id order by lsn) as next_valid_from
    from {{ ref('users_history') }}
)

select *
from versions
where
    valid_to < valid_from
    or (next_valid_from is not null and is_current)
    or (next_valid_from is not null and not is_ended_by_delete and valid_to != next_valid_from)
    or (next_valid_from is not null and next_valid_from < valid_to)
    or (next_valid_from is null and not is_current and valid_to is null)
