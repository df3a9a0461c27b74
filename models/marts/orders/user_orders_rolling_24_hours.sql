{{ config(
    partition_by=['order_date'],
    event_time='placed_at',
    input_reach={'before': '24 hours'},
) }}

with

orders_placed as (
    select
        order_event_id,
        order_id,
        user_id,
        amount,
        occurred_at as placed_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type = 'order_placed'
        and {{ kappa.in_recomputed_days('occurred_at') }}
),

rolling as (
    select
        order_event_id,
        order_id,
        user_id,
        amount,
        placed_at,
        count(*) over last_day as user_orders_in_last_24_hours,
        sum(amount) over last_day as user_amount_in_last_24_hours
    from orders_placed
    window last_day as ({{ sliding_window('user_id', 'placed_at', '24 hours') }})
),

final as (
    select
        -- ids
        order_event_id,
        order_id,
        user_id,
        -- attributes
        amount,
        user_orders_in_last_24_hours,
        user_amount_in_last_24_hours,
        -- timestamps
        placed_at,
        to_date(placed_at) as order_date
    from rolling
    -- the day before a recomputed day is read only to fill its rolling windows
    where {{ kappa.is_recomputed_day('to_date(placed_at)') }}
)

select * from final
