{{ config(
    partition_by=['search_date'],
    event_time='search_date',
) }}

with

searches as (
    select * from {{ ref('search_click_through') }}
    where {{ kappa.in_recomputed_days('searched_at', parent='search_click_through') }}
),

final as (
    select
        -- attributes
        search_query,
        count(*) as search_count,
        count_if(is_clicked) as clicked_search_count,
        count(*) - count_if(is_clicked) as searches_without_click_count,
        count_if(is_clicked) / count(*) as click_through_rate,
        avg(first_clicked_position) as average_first_clicked_position,
        -- timestamps
        search_date
    from searches
    group by search_date, search_query
)

select * from final
