{{ config(
    partition_by=['user_bucket'],
    recompute_key='user_id',
) }}

with

profile_changes as (
    select * from {{ ref('stg_users__profile_changes') }}
    where {{ kappa.in_recomputed_buckets('user_id') }}
),

effective as (
    -- the log's order is the LSN; a change takes effect at its event time, but never before a
    -- change that precedes it in the log (a skewed producer clock cannot reorder history)
    select
        *,
        max(occurred_at) over (
            partition by user_id order by lsn rows between unbounded preceding and current row
        ) as effective_at
    from profile_changes
),

versions as (
    select
        *,
        lead(effective_at) over (partition by user_id order by lsn) as next_effective_at,
        lead(event_type) over (partition by user_id order by lsn) as next_event_type
    from effective
),

final as (
    select
        -- ids
        profile_change_id as user_version_id,
        user_id,
        -- attributes
        lsn,
        email,
        country,
        tier,
        next_effective_at is null as is_current,
        coalesce(next_event_type = 'user_deleted', false) as is_ended_by_delete,
        -- timestamps
        effective_at as valid_from,
        next_effective_at as valid_to,
        -- partition
        {{ kappa.key_bucket('user_id') }} as user_bucket
    from versions
    -- a delete is the end of a version, not a version
    where event_type != 'user_deleted'
)

select * from final
