{{ config(
    partition_by=['user_bucket'],
    recompute_key='user_id',
) }}

with

orders_placed as (
    select * from {{ ref('stg_orders__order_events') }}
    where
        event_type = 'order_placed'
        and {{ kappa.in_recomputed_buckets('user_id') }}
),

user_versions as (
    select * from {{ ref('users_history') }}
    where {{ kappa.in_recomputed_buckets('user_id') }}
),

final as (
    select
        -- ids
        orders_placed.order_event_id,
        orders_placed.order_id,
        orders_placed.user_id,
        user_versions.user_version_id,
        -- attributes
        orders_placed.amount,
        user_versions.country as user_country,
        user_versions.tier as user_tier,
        user_versions.user_version_id is not null as has_user_profile,
        -- timestamps
        orders_placed.occurred_at as placed_at,
        -- partition
        {{ kappa.key_bucket('orders_placed.user_id') }} as user_bucket
    from orders_placed
    -- as of event time: the version in force when the order was placed
    left join user_versions
        on
            orders_placed.user_id = user_versions.user_id
            and orders_placed.occurred_at >= user_versions.valid_from
            and (user_versions.valid_to is null or orders_placed.occurred_at < user_versions.valid_to)
)

select * from final
