{% macro bounded_session_window(time_column, gap_minutes, max_length_hours) %}
    {#- Group-by expressions that form sessions per key (put the key before them): events of one
        key belong to one session while each follows the previous by at most `gap_minutes`, and
        a session is cut at the fixed block edges of session_cut(). Spark's session_window()
        does the gap part; it has no maximum length, and a length cap counted from a session's
        own start would make every later cut depend on how long the key has been active (a late
        event could move cuts days later), so the cap is aligned to fixed edges instead: a
        session's extent, and what a late event can change, stay inside one block. -#}
    {{ session_cut(time_column, max_length_hours) }},
    session_window({{ time_column }}, '{{ gap_minutes }} minutes')
{%- endmacro %}
