{% macro page_view_rows(page_views) %}
    {#- The SELECT of page_views after its input CTE: from `page_views` (a CTE or relation of
        int_user_activity_sessionized rows of event_type page_view), one row per view with its
        session and its place in the session among the views read. Shared with the
        benchmark's insert_overwrite baseline (models/bench), so that both compute the same
        thing from what they read. -#}
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
    from {{ page_views }}
)

select * from final
{%- endmacro %}
