{% macro page_view_rows(page_views) %}
    {#- The SELECT of page_views after its input CTE: from `page_views` (a CTE or relation of
        int_user_activity_sessionized's page_view rows), one row per view with its number in
        its session. Shared with the benchmark's lookback baseline (models/bench), so that
        both compute exactly the same thing. -#}
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
