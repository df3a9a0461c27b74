-- Every staged click appears once in int_search_clicks_matched, and the clicks that
-- search_click_through counts per search add up to the matched clicks: a click goes to at most
-- one search and is never counted twice. Fails with one row of the totals when they differ.
with

staged_clicks as (
    select count(*) as click_count from {{ ref('stg_search__clicks') }}
),

matched as (
    select
        count(*) as click_count,
        count(distinct search_click_id) as distinct_click_count,
        count_if(is_matched) as matched_click_count
    from {{ ref('int_search_clicks_matched') }}
),

counted as (
    select coalesce(sum(click_count), 0) as click_count
    from {{ ref('search_click_through') }}
)

select
    staged_clicks.click_count as staged_click_count,
    matched.click_count as matched_rows,
    matched.distinct_click_count,
    matched.matched_click_count,
    counted.click_count as counted_click_count
from staged_clicks
cross join matched
cross join counted
where
    staged_clicks.click_count != matched.click_count
    or matched.click_count != matched.distinct_click_count
    or matched.matched_click_count != counted.click_count
