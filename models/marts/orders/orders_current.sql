{{ config(
    partition_by=['order_bucket'],
    recompute_key='order_id',
) }}

with

order_events as (
    select * from {{ ref('stg_orders__order_events') }}
    where {{ kappa.in_recomputed_buckets('order_id') }}
),

event_lists as (
    select
        order_id,
        max_by(user_id, struct(occurred_at, order_event_id)) as user_id,
        count(*) as event_count,
        max(occurred_at) as last_event_at,
        array_sort(collect_list(struct(occurred_at, order_event_id, event_type, amount))) as events
    from order_events
    group by order_id
),

folded as (
    select
        order_id,
        user_id,
        event_count,
        last_event_at,
        {{ fold_order_events('events') }} as order_state
    from event_lists
),

final as (
    select
        -- ids
        order_id,
        user_id,
        -- attributes
        order_state.status as order_status,
        order_state.order_amount,
        order_state.paid_amount,
        order_state.failed_payment_count,
        event_count,
        order_state.impossible_transition_count,
        order_state.impossible_transition_count > 0 as has_impossible_transition,
        order_state.first_impossible_transition,
        -- timestamps
        order_state.placed_at,
        order_state.paid_at,
        order_state.shipped_at,
        order_state.cancelled_at,
        last_event_at,
        -- partition
        {{ kappa.key_bucket('order_id') }} as order_bucket
    from folded
)

select * from final
