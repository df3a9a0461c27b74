{% macro session_cut(time_column, max_length_hours) %}
    {#- The start of the fixed block of `max_length_hours` hours (counted from midnight UTC) that
        holds an event: sessions are cut at these block edges, so none is longer than the block
        and none spans two blocks. `max_length_hours` must divide 24, so blocks never straddle
        midnight and a session always falls in one UTC day. -#}
    {%- if (24 % (max_length_hours | int)) != 0 or (max_length_hours | int) < 1 -%}
        {% do exceptions.raise_compiler_error(
            "session_cut: max_length_hours must divide 24 (1, 2, 3, 4, 6, 8, 12 or 24); got " ~ max_length_hours
        ) %}
    {%- endif -%}
    timestamp_seconds(
        floor(unix_seconds({{ time_column }}) / {{ (max_length_hours | int) * 3600 }}) * {{ (max_length_hours | int) * 3600 }}
    )
{%- endmacro %}
