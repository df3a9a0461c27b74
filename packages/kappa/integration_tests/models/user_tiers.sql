-- keys mode over a keys parent with the same key: the buckets user_state recomputed, traced
-- through the ledger
{{ config(partition_by=['user_bucket'], recompute_key='user_id') }}

with

states as (
    select * from {{ ref('user_state') }}
    where {{ kappa.in_recomputed_buckets('user_id') }}
),

final as (
    select user_id, case when total_amount >= 20 then 'gold' else 'basic' end as tier, user_bucket
    from states
)

select * from final
