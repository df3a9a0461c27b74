-- days mode, a running state (before: 'all'): each user's first event, on its day; a late
-- earlier event moves it, and can empty a later day
{{ config(partition_by=['first_date'], event_time='first_at', input_reach={'before': 'all'}) }}

with

recent as (
    select * from {{ ref('stg_events') }}
    where {{ kappa.in_recomputed_days('event_at') }}
),

earlier_buyers as (
    select distinct user_id from {{ ref('stg_events') }}
    where {{ kappa.before_recomputed_days('event_at') }}
),

ranked as (
    select
        recent.*,
        row_number() over (partition by recent.user_id order by recent.event_at, recent.event_id) as purchase_rank
    from recent
    left anti join earlier_buyers
        on recent.user_id = earlier_buyers.user_id
),

final as (
    select user_id, event_id as first_event_id, event_at as first_at, to_date(event_at) as first_date
    from ranked
    where purchase_rank = 1
)

select * from final
