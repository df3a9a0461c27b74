{{ config(
    partition_by=['user_bucket'],
    recompute_key='user_id',
) }}

with

versions as (
    select * from {{ ref('users_history') }}
    where {{ kappa.in_recomputed_buckets('user_id') }}
),

final as (
    select
        -- ids
        user_id,
        user_version_id,
        -- attributes
        lsn,
        email,
        country,
        tier,
        -- timestamps
        valid_from as current_since,
        -- partition
        user_bucket
    from versions
    -- the latest version, unless a delete ended it (log compaction: a delete removes the key)
    where is_current
)

select * from final
