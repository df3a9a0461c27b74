{% macro tumbling_window(time_column, size) %}
    {#- The tumbling window of an event: Spark's window() with no slide, a struct
        <start, end> with start inclusive and end exclusive, aligned to the Unix epoch (so
        '1 day' windows start at midnight UTC and '1 hour' windows on the hour). Each event is
        in exactly one window. -#}
    window({{ time_column }}, '{{ size }}')
{%- endmacro %}
