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

final as (
    select
        -- ids
        activity_event_id as page_view_id,
        session_id,
        user_id,
        -- attributes
        page_path,
        row_number() over (
            partition by session_id order by occurred_at, activity_event_id
        ) as view_number_in_session,
        -- timestamps
        occurred_at as viewed_at,
        activity_date as view_date
    from page_views
)

select * from final
