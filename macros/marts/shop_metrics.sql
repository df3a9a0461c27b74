{% macro shop_metrics(window_size) %}
    {#- The SQL of a tumbling shop-metrics model (shop_metrics_per_minute, _per_hour, _per_day):
        per tumbling window of `window_size` (start inclusive, end exclusive, aligned to the
        epoch, so hours start on the hour and days at midnight UTC): user activity events and
        active users (from int_user_activity_sessionized), orders placed, and revenue (amounts of
        order_paid events), each counted in the window of its own event time. A window with no
        activity and no order has no row. The model must be configured with
        partition_by=['window_date'] and event_time='window_start'. -#}
with

activity as (
    select
        user_id,
        occurred_at
    from {{ ref('int_user_activity_sessionized') }}
    where {{ kappa.in_recomputed_days('occurred_at', parent='int_user_activity_sessionized') }}
),

order_events as (
    select
        event_type,
        amount,
        occurred_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type in ('order_placed', 'order_paid')
        and {{ kappa.in_recomputed_days('occurred_at') }}
),

activity_windows as (
    select
        {{ tumbling_window('occurred_at', window_size) }}.start as window_start,
        count(*) as activity_event_count,
        count(distinct user_id) as active_user_count
    from activity
    group by {{ tumbling_window('occurred_at', window_size) }}
),

order_windows as (
    select
        {{ tumbling_window('occurred_at', window_size) }}.start as window_start,
        count_if(event_type = 'order_placed') as orders_placed_count,
        coalesce(sum(case when event_type = 'order_paid' then amount end), 0) as revenue
    from order_events
    group by {{ tumbling_window('occurred_at', window_size) }}
),

final as (
    select
        -- timestamps
        coalesce(activity_windows.window_start, order_windows.window_start) as window_start,
        coalesce(activity_windows.window_start, order_windows.window_start)
        + interval {{ window_size }} as window_end,
        -- measures
        coalesce(activity_windows.activity_event_count, 0) as activity_event_count,
        coalesce(activity_windows.active_user_count, 0) as active_user_count,
        coalesce(order_windows.orders_placed_count, 0) as orders_placed_count,
        coalesce(order_windows.revenue, 0) as revenue,
        to_date(coalesce(activity_windows.window_start, order_windows.window_start)) as window_date
    from activity_windows
    full outer join order_windows
        on activity_windows.window_start = order_windows.window_start
)

select * from final
{%- endmacro %}
