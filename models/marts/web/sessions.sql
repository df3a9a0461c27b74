{{ config(
    partition_by=['session_date'],
    event_time='session_started_at',
) }}

with

activity as (
    select
        *,
        -- ties on time are broken by event id, so landing and exit are deterministic
        struct(occurred_at, activity_event_id) as event_order
    from {{ ref('int_user_activity_sessionized') }}
    where {{ kappa.in_recomputed_days('occurred_at', parent='int_user_activity_sessionized') }}
),

orders_placed as (
    select
        order_id,
        user_id,
        occurred_at as placed_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type = 'order_placed'
        and {{ kappa.in_recomputed_days('occurred_at') }}
),

{{ session_rows('activity', 'orders_placed') }}
