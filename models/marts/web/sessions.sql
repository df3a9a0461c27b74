with

page_views as (
    select
        web_event_id as page_view_id,
        user_id,
        page_path,
        occurred_at as viewed_at
    from {{ ref('stg_web__events') }}
    where event_type = 'page_view'
),

sessionized as (
    -- session_window gives each view the window [viewed_at, viewed_at + gap) and merges windows
    -- that overlap or touch, so a view exactly one gap after the previous stays in its session
    select
        user_id,
        min(viewed_at) as session_started_at,
        max(viewed_at) as session_ended_at,
        count(*) as page_view_count,
        -- ties on viewed_at are broken by page_view_id so landing and exit are deterministic
        min_by(page_path, struct(viewed_at, page_view_id)) as landing_page_path,
        max_by(page_path, struct(viewed_at, page_view_id)) as exit_page_path
    from page_views
    group by
        user_id,
        session_window(viewed_at, '{{ var("session_inactivity_gap_minutes") }} minutes')
),

final as (
    select
        -- ids
        {{ surrogate_key(['user_id', 'session_started_at']) }} as session_id,
        user_id,
        -- attributes
        landing_page_path,
        exit_page_path,
        page_view_count,
        page_view_count = 1 as is_bounce,
        (unix_millis(session_ended_at) - unix_millis(session_started_at)) div 1000 as duration_seconds,
        -- timestamps
        session_started_at,
        session_ended_at
    from sessionized
)

select * from final
