{{ config(
    partition_by=['click_date'],
    event_time='clicked_at',
    input_reach={'before': var('search_click_window_minutes') ~ ' minutes'},
) }}

with

clicks as (
    -- the clicks of the recomputed days only
    select * from {{ ref('stg_search__clicks') }}
    where {{ kappa.in_recomputed_days('occurred_at', before='0 minutes') }}
),

searches as (
    -- and the searches they can go to: from one window before those days
    select * from {{ ref('stg_search__searches') }}
    where {{ kappa.in_recomputed_days('occurred_at') }}
),

candidates as (
    -- the user's searches that showed the clicked product, in the window up to the click
    select
        clicks.search_click_id,
        searches.search_event_id,
        searches.search_id,
        searches.occurred_at as searched_at,
        array_position(searches.result_product_ids, clicks.product_id) as result_position,
        row_number() over (
            partition by clicks.search_click_id
            order by searches.occurred_at desc, searches.search_event_id desc
        ) as recency_rank
    from clicks
    inner join searches
        on
            clicks.user_id = searches.user_id
            and clicks.occurred_at >= searches.occurred_at
            and clicks.occurred_at - interval {{ var('search_click_window_minutes') }} minutes
            <= searches.occurred_at
            and array_contains(searches.result_product_ids, clicks.product_id)
),

final as (
    select
        -- ids
        clicks.search_click_id,
        candidates.search_event_id,
        candidates.search_id,
        clicks.user_id,
        clicks.product_id,
        -- attributes
        clicks.search_query as click_search_query,
        candidates.result_position,
        candidates.search_event_id is not null as is_matched,
        -- timestamps
        candidates.searched_at,
        clicks.occurred_at as clicked_at,
        to_date(clicks.occurred_at) as click_date
    from clicks
    left join candidates
        on
            clicks.search_click_id = candidates.search_click_id
            and candidates.recency_rank = 1
)

select * from final
