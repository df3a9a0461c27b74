{{ config(
    partition_by=['view_date'],
    event_time='viewed_at',
) }}

with

page_views as (
    select * from {{ ref('int_user_activity_sessionized') }}
    where
        event_type = 'page_view'
        and {{ kappa.in_recomputed_days('occurred_at', parent='int_user_activity_sessionized') }}
),

{{ page_view_rows('page_views') }}
