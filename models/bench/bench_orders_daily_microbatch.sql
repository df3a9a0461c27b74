{{ config(
    enabled=var('kappa_bench_baselines', false),
    materialized='incremental',
    incremental_strategy='microbatch',
    event_time='order_date',
    batch_size='day',
    begin='2024-03-01',
    partition_by=['order_date'],
) }}

with

-- dbt filters this to the day of each batch by stg_orders__order_events' event_time
order_events as (
    select * from {{ ref('stg_orders__order_events') }}
),

{{ daily_order_metrics('order_events') }}
