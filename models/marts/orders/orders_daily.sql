{{ config(
    partition_by=['order_date'],
    event_time='order_date',
) }}

with

order_events as (
    select * from {{ ref('stg_orders__order_events') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

{{ daily_order_metrics('order_events') }}
