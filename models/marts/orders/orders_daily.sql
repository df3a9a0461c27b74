{{ config(
    partition_by=['order_date'],
    event_time='order_date',
) }}

with

order_events as (
    select * from {{ ref('stg_orders__order_events') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

daily as (
    select
        to_date(occurred_at) as order_date,
        count_if(event_type = 'order_placed') as orders_placed_count,
        count_if(event_type = 'order_paid') as orders_paid_count,
        count_if(event_type = 'payment_failed') as payment_failures_count,
        count_if(event_type = 'order_shipped') as orders_shipped_count,
        count_if(event_type = 'order_cancelled') as orders_cancelled_count,
        coalesce(sum(case when event_type = 'order_paid' then amount end), 0) as revenue,
        count(distinct case when event_type = 'order_paid' then user_id end) as paying_customer_count
    from order_events
    group by to_date(occurred_at)
),

final as (
    select
        -- attributes
        orders_placed_count,
        orders_paid_count,
        payment_failures_count,
        orders_shipped_count,
        orders_cancelled_count,
        revenue,
        paying_customer_count,
        cast(revenue / nullif(orders_paid_count, 0) as decimal(12, 2)) as average_paid_order_value,
        -- timestamps
        order_date
    from daily
)

select * from final
