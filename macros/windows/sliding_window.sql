{% macro sliding_window(partition_by, order_by, length) %}
    {#- The window specification of a per-key rolling aggregate over a time range: for each row,
        the rows of the same key whose `order_by` time lies in [time - length, time], both ends
        inclusive, including every row at the same time (a range frame, not a row count).
        Use as `count(*) over ({{ sliding_window('user_id', 'occurred_at', '1 hour') }})`. -#}
    partition by {{ partition_by }}
    order by {{ order_by }}
    range between interval {{ length }} preceding and current row
{%- endmacro %}
