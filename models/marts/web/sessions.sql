{{ config(
    partition_by=['session_date'],
    event_time='session_started_at',
) }}

with

activity as (
    select
        *,
        -- ties on time are broken by event id, so landing and exit are deterministic
        struct(occurred_at, activity_event_id) as event_order
    from {{ ref('int_user_activity_sessionized') }}
    where {{ kappa.in_recomputed_days('occurred_at', parent='int_user_activity_sessionized') }}
),

orders_placed as (
    select
        order_id,
        user_id,
        occurred_at as placed_at
    from {{ ref('stg_orders__order_events') }}
    where
        event_type = 'order_placed'
        and {{ kappa.in_recomputed_days('occurred_at') }}
),

sessions as (
    select
        session_id,
        user_id,
        session_started_at,
        session_ended_at,
        count(*) as event_count,
        count_if(event_type = 'page_view') as page_view_count,
        count_if(event_type = 'add_to_cart') as add_to_cart_count,
        count_if(event_type = 'search') as search_count,
        count_if(event_type = 'search_result_click') as search_click_count,
        min_by(page_path, event_order) filter (where event_type = 'page_view') as landing_page_path,
        max_by(page_path, event_order) filter (where event_type = 'page_view') as exit_page_path,
        -- the edge of the session's block: the next session starts there at the latest
        {{ session_cut('session_started_at', var('session_max_length_hours')) }}
        + interval {{ var('session_max_length_hours') }} hours as block_ends_at
    from activity
    group by session_id, user_id, session_started_at, session_ended_at
),

conversions as (
    select
        sessions.session_id,
        count(*) as order_count
    from sessions
    inner join orders_placed as orders_placed
        on
            sessions.user_id = orders_placed.user_id
            -- placed while the session is live: from its start to at most one gap after its last
            -- event, and before its block's edge (so an order never counts for two sessions)
            and sessions.session_started_at <= orders_placed.placed_at
            and sessions.session_ended_at + interval {{ var('session_inactivity_gap_minutes') }} minutes
            >= orders_placed.placed_at
            and sessions.block_ends_at > orders_placed.placed_at
    group by sessions.session_id
),

final as (
    select
        -- ids
        sessions.session_id,
        sessions.user_id,
        -- attributes
        sessions.landing_page_path,
        sessions.exit_page_path,
        sessions.event_count,
        sessions.page_view_count,
        sessions.add_to_cart_count,
        sessions.search_count,
        sessions.search_click_count,
        coalesce(conversions.order_count, 0) as order_count,
        conversions.order_count is not null as is_converted,
        sessions.event_count = 1 as is_bounce,
        (unix_millis(sessions.session_ended_at) - unix_millis(sessions.session_started_at)) div 1000
            as duration_seconds,
        -- timestamps
        sessions.session_started_at,
        sessions.session_ended_at,
        to_date(sessions.session_started_at) as session_date
    from sessions
    left join conversions
        on sessions.session_id = conversions.session_id
)

select * from final
