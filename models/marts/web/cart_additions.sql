{{ config(
    partition_by=['added_date'],
    event_time='added_at',
    input_reach={'after': '1 hour'},
) }}

with

cart_additions as (
    -- the additions of the recomputed days only
    select
        web_event_id,
        user_id,
        product_id,
        quantity,
        unit_price,
        occurred_at as added_at
    from {{ ref('stg_web__events') }}
    where
        event_type = 'add_to_cart'
        and {{ kappa.in_recomputed_days('occurred_at', after='0 minutes') }}
),

orders_placed as (
    -- and the orders that can follow them: up to an hour after those days
    select
        order_id,
        user_id,
        occurred_at as placed_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type = 'order_placed'
        and {{ kappa.in_recomputed_days('occurred_at') }}
),

next_orders as (
    -- the user's first order placed within the hour after the addition, if any
    select
        cart_additions.web_event_id,
        min_by(orders_placed.order_id, struct(orders_placed.placed_at, orders_placed.order_id)) as order_id,
        min(orders_placed.placed_at) as placed_at
    from cart_additions
    inner join orders_placed
        on
            cart_additions.user_id = orders_placed.user_id
            and cart_additions.added_at <= orders_placed.placed_at
            and cart_additions.added_at + interval 1 hour >= orders_placed.placed_at
    group by cart_additions.web_event_id
),

final as (
    select
        -- ids
        cart_additions.web_event_id as cart_addition_id,
        cart_additions.user_id,
        cart_additions.product_id,
        next_orders.order_id,
        -- attributes
        cart_additions.quantity,
        cart_additions.unit_price,
        next_orders.order_id is null as is_abandoned,
        -- timestamps
        cart_additions.added_at,
        next_orders.placed_at,
        to_date(cart_additions.added_at) as added_date
    from cart_additions
    left join next_orders
        on cart_additions.web_event_id = next_orders.web_event_id
)

select * from final
