-- days mode over a days parent: the days daily_totals recomputed, traced through the ledger
{{ config(partition_by=['event_date'], event_time='day_start') }}

with

totals as (
    select * from {{ ref('daily_totals') }}
    where {{ kappa.in_recomputed_days('day_start', parent='daily_totals') }}
),

final as (
    select day_start, amount / events as average_amount, event_date
    from totals
)

select * from final
