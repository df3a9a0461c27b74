{{ config(
    partition_by=['change_date'],
    event_time='occurred_at',
    input_reach={'before': 'all'},
) }}

with

inventory_changes as (
    -- the changes of the days this run recomputes (every day from the first one a new change
    -- touches through the last)
    select * from {{ ref('stg_inventory__inventory_changes') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

opening_levels as (
    -- each product's level when those days begin: the sum of its earlier changes (nothing on
    -- a full refresh, which sums from the first change)
    select
        product_id,
        sum(quantity_delta) as opening_level
    from {{ ref('stg_inventory__inventory_changes') }}
    where {{ kappa.before_recomputed_days('occurred_at') }}
    group by product_id
),

running as (
    -- state is the integral of the stream: the level after each change is the sum of every
    -- change of the product up to it, in event-time order (ties by change id)
    select
        inventory_changes.*,
        coalesce(opening_levels.opening_level, 0) + sum(inventory_changes.quantity_delta) over (
            partition by inventory_changes.product_id
            order by inventory_changes.occurred_at, inventory_changes.inventory_change_id
            rows between unbounded preceding and current row
        ) as level_after
    from inventory_changes
    left join opening_levels
        on inventory_changes.product_id = opening_levels.product_id
),

final as (
    select
        -- ids
        inventory_change_id,
        product_id,
        order_id,
        -- attributes
        event_type as change_type,
        quantity_delta,
        level_after,
        level_after - quantity_delta as level_before,
        level_after <= 0 as is_stock_out,
        level_after <= 0 and level_after - quantity_delta > 0 as is_stock_out_start,
        -- timestamps
        occurred_at,
        -- partition
        to_date(occurred_at) as change_date
    from running
)

select * from final
