{{ config(
    enabled=var('kappa_bench_baselines', false),
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['session_date'],
) }}

{%- set lookback_start -%}
    (select date_sub(max(built.session_date), {{ var('kappa_bench_lookback_days', 3) }}) from {{ this }} as built)
{%- endset %}

with

-- sessions as a dbt user writes it for late data: the last days it has built, back to a fixed
-- lookback, recomputed and their partitions overwritten (a session never spans two days)
activity as (
    select
        *,
        struct(occurred_at, activity_event_id) as event_order
    from {{ ref('int_user_activity_sessionized') }}
    {% if is_incremental() %}
        where activity_date >= {{ lookback_start }}
    {% endif %}
),

orders_placed as (
    select
        order_id,
        user_id,
        occurred_at as placed_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type = 'order_placed'
        {% if is_incremental() %}
            and to_date(occurred_at) >= {{ lookback_start }}
        {% endif %}
),

{{ session_rows('activity', 'orders_placed') }}
