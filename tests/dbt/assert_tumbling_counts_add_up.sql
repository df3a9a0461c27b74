-- Tumbling windows partition time: per UTC day, the activity events, orders placed and revenue
-- of the minute, hour and day windows all add up to what staging holds for that day.
-- Fails with every (model, day) whose totals differ from the staged ones.
with

staged_activity as (
    select occurred_at from {{ ref('stg_web__events') }}
    union all
    select occurred_at from {{ ref('stg_search__searches') }}
    union all
    select occurred_at from {{ ref('stg_search__clicks') }}
),

staged_orders as (
    select
        occurred_at,
        event_type,
        amount
    from {{ ref('stg_orders__order_events') }}
    where event_type in ('order_placed', 'order_paid')
),

staged_activity_days as (
    select
        to_date(occurred_at) as event_date,
        count(*) as activity_event_count
    from staged_activity
    group by to_date(occurred_at)
),

staged_order_days as (
    select
        to_date(occurred_at) as event_date,
        count_if(event_type = 'order_placed') as orders_placed_count,
        coalesce(sum(case when event_type = 'order_paid' then amount end), 0) as revenue
    from staged_orders
    group by to_date(occurred_at)
),

staged_days as (
    select
        coalesce(staged_activity_days.event_date, staged_order_days.event_date) as event_date,
        coalesce(staged_activity_days.activity_event_count, 0) as activity_event_count,
        coalesce(staged_order_days.orders_placed_count, 0) as orders_placed_count,
        coalesce(staged_order_days.revenue, 0) as revenue
    from staged_activity_days
    full outer join staged_order_days
        on staged_activity_days.event_date = staged_order_days.event_date
),

window_days as (
    {%- for model in ['shop_metrics_per_minute', 'shop_metrics_per_hour', 'shop_metrics_per_day'] %}
        select
            '{{ model }}' as model_name,
            window_date as event_date,
            sum(activity_event_count) as activity_event_count,
            sum(orders_placed_count) as orders_placed_count,
            sum(revenue) as revenue
        from {{ ref(model) }}
        group by window_date
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

models as (
    select model_name from window_days
    group by model_name
),

expected as (
    select
        models.model_name,
        staged_days.event_date,
        staged_days.activity_event_count,
        staged_days.orders_placed_count,
        staged_days.revenue
    from models
    cross join staged_days
)

select
    coalesce(expected.model_name, window_days.model_name) as model_name,
    coalesce(expected.event_date, window_days.event_date) as event_date,
    expected.activity_event_count as staged_activity_event_count,
    window_days.activity_event_count,
    expected.orders_placed_count as staged_orders_placed_count,
    window_days.orders_placed_count,
    expected.revenue as staged_revenue,
    window_days.revenue
from expected
full outer join window_days
    on expected.model_name = window_days.model_name and expected.event_date = window_days.event_date
where
    expected.event_date is null
    or window_days.event_date is null
    or expected.activity_event_count != window_days.activity_event_count
    or expected.orders_placed_count != window_days.orders_placed_count
    or expected.revenue != window_days.revenue
