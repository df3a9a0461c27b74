{% test not_null_columns(model, column_names) %}
    {#- Fails with one row per listed column that holds a null: the column and how many of the
        model's rows have it null. Every column in one scan of the model, where a `not_null`
        test per column scans the model once per column (docs/testing.md). -#}
    with null_counts as (
        select
        {%- for column in column_names %}
            count_if({{ adapter.quote(column) }} is null) as nulls_{{ loop.index }}
            {{- "," if not loop.last }}
        {%- endfor %}
        from {{ model }}
    )

    select column_name, null_rows
    from (
        select stack(
            {{ column_names | length }}
            {%- for column in column_names %},
            '{{ column }}', nulls_{{ loop.index }}
            {%- endfor %}
        ) as (column_name, null_rows)
        from null_counts
    )
    where null_rows > 0
{% endtest %}
