{% macro fold_order_events(events) %}
    {#- Event sourcing: an order's state as the fold (Spark's aggregate() over an array) of its
        events in event-time order. `events` is an array of
        struct<occurred_at, order_event_id, event_type, amount> sorted by (occurred_at,
        order_event_id). The state machine:
            order_placed     from nothing                        -> placed
            payment_failed   from placed or payment_failed       -> payment_failed
            order_paid       from placed or payment_failed       -> paid
            order_shipped    from paid                           -> shipped
            order_cancelled  from placed, payment_failed or paid -> cancelled
        Any other event is an impossible transition: it is counted and the first one is named
        ('<event> after <state>'), and it does not change the state; nothing is dropped. -#}
    {%- set allowed -%}
        coalesce(case event.event_type
            when 'order_placed' then state.status is null
            when 'payment_failed' then state.status in ('placed', 'payment_failed')
            when 'order_paid' then state.status in ('placed', 'payment_failed')
            when 'order_shipped' then state.status = 'paid'
            when 'order_cancelled' then state.status in ('placed', 'payment_failed', 'paid')
            else false
        end, false)
    {%- endset -%}
    aggregate(
        {{ events }},
        named_struct(
            'status', cast(null as string),
            'placed_at', cast(null as timestamp),
            'paid_at', cast(null as timestamp),
            'shipped_at', cast(null as timestamp),
            'cancelled_at', cast(null as timestamp),
            'order_amount', cast(null as decimal(12, 2)),
            'paid_amount', cast(null as decimal(12, 2)),
            'failed_payment_count', 0,
            'impossible_transition_count', 0,
            'first_impossible_transition', cast(null as string)
        ),
        (state, event) -> named_struct(
            'status', case when {{ allowed }} then case event.event_type
                when 'order_placed' then 'placed'
                when 'payment_failed' then 'payment_failed'
                when 'order_paid' then 'paid'
                when 'order_shipped' then 'shipped'
                when 'order_cancelled' then 'cancelled'
            end else state.status end,
            'placed_at', case when {{ allowed }} and event.event_type = 'order_placed'
                then event.occurred_at else state.placed_at end,
            'paid_at', case when {{ allowed }} and event.event_type = 'order_paid'
                then event.occurred_at else state.paid_at end,
            'shipped_at', case when {{ allowed }} and event.event_type = 'order_shipped'
                then event.occurred_at else state.shipped_at end,
            'cancelled_at', case when {{ allowed }} and event.event_type = 'order_cancelled'
                then event.occurred_at else state.cancelled_at end,
            'order_amount', case when {{ allowed }} and event.event_type = 'order_placed'
                then event.amount else state.order_amount end,
            'paid_amount', case when {{ allowed }} and event.event_type = 'order_paid'
                then event.amount else state.paid_amount end,
            'failed_payment_count', state.failed_payment_count
                + case when {{ allowed }} and event.event_type = 'payment_failed' then 1 else 0 end,
            'impossible_transition_count', state.impossible_transition_count
                + case when {{ allowed }} then 0 else 1 end,
            'first_impossible_transition', case
                when not {{ allowed }} and state.first_impossible_transition is null
                    then concat(event.event_type, ' after ', coalesce(state.status, 'no order_placed'))
                else state.first_impossible_transition
            end
        )
    )
{%- endmacro %}
