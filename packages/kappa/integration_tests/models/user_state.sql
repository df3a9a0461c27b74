-- keys mode: each user's current state from all of their events; a closed user has none.
-- On Delta its recomputed buckets are merged on user_id (a changed row updated, a closed
-- user's row deleted); replaced whole on parquet
{{ config(
    partition_by=['user_bucket'],
    recompute_key='user_id',
    incremental_strategy=('merge' if target.name == 'local_delta' else none),
    unique_key='user_id',
    tblproperties=({'delta.enableDeletionVectors': 'true'} if target.name == 'local_delta' else none),
) }}

with

events as (
    select * from {{ ref('stg_events') }}
    where {{ kappa.in_recomputed_buckets('user_id') }}
),

ranked as (
    select
        *,
        row_number() over (partition by user_id order by event_at desc, event_id desc) as recency_rank,
        count(*) over (partition by user_id) as events,
        sum(amount) over (partition by user_id) as total_amount
    from events
),

final as (
    select
        user_id,
        event_id as last_event_id,
        event_at as last_event_at,
        events,
        total_amount,
        {{ kappa.key_bucket('user_id') }} as user_bucket
    from ranked
    where recency_rank = 1 and kind != 'close'
)

select * from final
