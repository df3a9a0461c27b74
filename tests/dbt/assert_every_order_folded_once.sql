-- orders_current holds every order of the staged order events exactly once, and its event
-- counts add up to the staged events: no event is lost to the fold, valid or not.
-- Fails with one row of the totals when they differ.
with

staged as (
    select
        count(distinct order_id) as order_count,
        count(*) as event_count
    from {{ ref('stg_orders__order_events') }}
),

folded as (
    select
        count(*) as order_count,
        coalesce(sum(event_count), 0) as event_count
    from {{ ref('orders_current') }}
)

select
    staged.order_count as staged_order_count,
    folded.order_count as folded_order_count,
    staged.event_count as staged_event_count,
    folded.event_count as folded_event_count
from staged
cross join folded
where staged.order_count != folded.order_count or staged.event_count != folded.event_count
