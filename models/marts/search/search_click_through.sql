{{ config(
    partition_by=['search_date'],
    event_time='searched_at',
    input_reach={'after': var('search_click_window_minutes') ~ ' minutes'},
) }}

with

searches as (
    -- the searches of the recomputed days only
    select * from {{ ref('stg_search__searches') }}
    where {{ kappa.in_recomputed_days('occurred_at', after='0 minutes') }}
),

matched_clicks as (
    -- and the clicks that can go to them: up to one window after those days
    select * from {{ ref('int_search_clicks_matched') }}
    where
        is_matched
        and {{ kappa.in_recomputed_days('clicked_at', parent='int_search_clicks_matched') }}
),

clicks_per_search as (
    select
        search_event_id,
        count(*) as click_count,
        min_by(result_position, struct(clicked_at, search_click_id)) as first_clicked_position,
        min(clicked_at) as first_clicked_at
    from matched_clicks
    group by search_event_id
),

final as (
    select
        -- ids
        searches.search_event_id,
        searches.search_id,
        searches.user_id,
        -- attributes
        searches.search_query,
        searches.result_count,
        coalesce(clicks_per_search.click_count, 0) as click_count,
        clicks_per_search.search_event_id is not null as is_clicked,
        clicks_per_search.first_clicked_position,
        -- timestamps
        searches.occurred_at as searched_at,
        clicks_per_search.first_clicked_at,
        to_date(searches.occurred_at) as search_date
    from searches
    left join clicks_per_search
        on searches.search_event_id = clicks_per_search.search_event_id
)

select * from final
