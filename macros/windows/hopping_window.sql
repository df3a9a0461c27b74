{% macro hopping_window(time_column, size, slide) %}
    {#- The hopping windows of an event: Spark's window() with a slide, windows of `size`
        starting every `slide`, start inclusive, end exclusive, aligned to the Unix epoch. Used
        in a select or group by, it turns each event into size/slide rows (Spark expands them
        before aggregating), so the cost grows with size/slide: fine for 5 minutes every
        minute (5 rows per event), not for a day every minute. -#}
    window({{ time_column }}, '{{ size }}', '{{ slide }}')
{%- endmacro %}
