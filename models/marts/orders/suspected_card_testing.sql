{{ config(
    partition_by=['paid_date'],
    event_time='paid_at',
    input_reach={'before': '10 minutes'},
) }}

with

payment_events as (
    select
        order_event_id,
        order_id,
        user_id,
        event_type,
        occurred_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type in ('payment_failed', 'order_paid')
        and {{ kappa.in_recomputed_days('occurred_at') }}
),

failures_before_success as (
    -- Spark SQL has no MATCH_RECOGNIZE: the pattern "at least 3 failed payments, then a
    -- success, within 10 minutes" is a range frame over each user's payments, read at
    -- every success
    select
        order_event_id,
        order_id,
        user_id,
        event_type,
        occurred_at,
        count_if(event_type = 'payment_failed') over last_ten_minutes as failed_payment_count,
        min(case when event_type = 'payment_failed' then occurred_at end)
            over last_ten_minutes as first_failed_at,
        -- (no count(distinct) over a window in Spark: the size of the set instead)
        size(
            collect_set(case when event_type = 'payment_failed' then order_id end) over last_ten_minutes
        ) as failed_order_count
    from payment_events
    window last_ten_minutes as ({{ sliding_window('user_id', 'occurred_at', '10 minutes') }})
),

final as (
    select
        -- ids
        order_event_id,
        order_id,
        user_id,
        -- attributes
        failed_payment_count,
        failed_order_count,
        -- timestamps
        first_failed_at,
        occurred_at as paid_at,
        to_date(occurred_at) as paid_date
    from failures_before_success
    where
        event_type = 'order_paid'
        and failed_payment_count >= 3
        -- a success in the first minutes of a day reads failures of the day before
        and {{ kappa.is_recomputed_day('to_date(occurred_at)') }}
)

select * from final
