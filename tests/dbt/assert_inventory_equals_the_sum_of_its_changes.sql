-- Every product's current level (its latest change's level_after) equals the sum of all of its
-- staged changes, and each product has exactly one latest change. Fails with every product
-- where this does not hold.
with

staged_totals as (
    select
        product_id,
        sum(quantity_delta) as total_delta
    from {{ ref('stg_inventory__inventory_changes') }}
    group by product_id
),

levels as (
    select
        product_id,
        count_if(is_latest) as latest_count,
        max(case when is_latest then level_after end) as current_level
    from {{ ref('inventory_levels') }}
    group by product_id
)

select
    coalesce(staged_totals.product_id, levels.product_id) as product_id,
    staged_totals.total_delta,
    levels.current_level,
    levels.latest_count
from staged_totals
full outer join levels
    on staged_totals.product_id = levels.product_id
where
    staged_totals.product_id is null
    or levels.product_id is null
    or levels.latest_count != 1
    or coalesce(staged_totals.total_delta, 0) != levels.current_level
