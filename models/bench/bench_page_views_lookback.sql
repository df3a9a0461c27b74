{{ config(
    enabled=var('kappa_bench_baselines', false),
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['view_date'],
) }}

with

-- page_views as a dbt user writes it for late data: the last days it has built, back to a
-- fixed lookback, recomputed and their partitions overwritten
page_views as (
    select * from {{ ref('int_user_activity_sessionized') }}
    where
        event_type = 'page_view'
        {% if is_incremental() %}
            and activity_date >= (
                select date_sub(max(built.view_date), {{ var('kappa_bench_lookback_days', 3) }})
                from {{ this }} as built
            )
        {% endif %}
),

{{ page_view_rows('page_views') }}
