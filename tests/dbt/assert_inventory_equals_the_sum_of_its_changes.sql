-- Every product's current level (its latest change's level_after) equals the sum of all of its
-- staged changes, and every staged change has its row. Fails with every product where this
-- does not hold.
with

staged_totals as (
    select
        product_id,
        count(*) as change_count,
        sum(quantity_delta) as total_delta
    from {{ ref('stg_inventory__inventory_changes') }}
    group by product_id
),

levels as (
    select
        product_id,
        count(*) as change_count,
        max_by(level_after, struct(occurred_at, inventory_change_id)) as current_level
    from {{ ref('inventory_levels') }}
    group by product_id
)

select
    coalesce(staged_totals.product_id, levels.product_id) as product_id,
    staged_totals.total_delta,
    levels.current_level,
    staged_totals.change_count as staged_change_count,
    levels.change_count
from staged_totals
full outer join levels
    on staged_totals.product_id = levels.product_id
where
    staged_totals.product_id is null
    or levels.product_id is null
    or levels.change_count != staged_totals.change_count
    or coalesce(staged_totals.total_delta, 0) != levels.current_level
