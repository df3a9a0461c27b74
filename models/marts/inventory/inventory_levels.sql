{{ config(
    partition_by=['product_bucket'],
    recompute_key='product_id',
) }}

with

inventory_changes as (
    select * from {{ ref('stg_inventory__inventory_changes') }}
    where {{ in_recomputed_buckets('product_id') }}
),

running as (
    -- state is the integral of the stream: the level after each change is the sum of every
    -- change of the product up to it, in event-time order (ties by change id)
    select
        *,
        sum(quantity_delta) over (
            partition by product_id
            order by occurred_at, inventory_change_id
            rows between unbounded preceding and current row
        ) as level_after,
        row_number() over (
            partition by product_id order by occurred_at desc, inventory_change_id desc
        ) = 1 as is_latest
    from inventory_changes
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
        is_latest,
        -- timestamps
        occurred_at,
        -- partition
        {{ key_bucket('product_id') }} as product_bucket
    from running
)

select * from final
