{% macro _ledger_values(rows) %}
    {#- Ledger rows (dictionaries with model_name, first_batch_id, last_batch_id, refresh_mode,
        recomputed_partitions, sql_fingerprint) as an inline table for a FROM clause, in the
        ledger's column order; recorded_at is the time of the statement, a missing value null. -#}
    {%- set columns = kappa._ledger_columns() -%}
    values
    {%- for row in rows %}
        (
        {%- for column in columns -%}
            {%- set value = row.get(column.name) -%}
            {%- if column.name == 'recorded_at' -%}
                current_timestamp()
            {%- elif value is none -%}
                cast(null as {{ column.type }})
            {%- elif column.type == 'bigint' -%}
                cast({{ value }} as bigint)
            {%- elif column.type == 'string' -%}
                '{{ value }}'
            {%- else -%}
                cast(array({% for item in value %}'{{ item }}'{{ ", " if not loop.last }}{% endfor %}) as {{ column.type }})
            {%- endif -%}
            {{- ", " if not loop.last -}}
        {%- endfor -%}
        ){{ ", " if not loop.last }}
    {%- endfor %}
    as recorded ({{ columns | map(attribute='name') | join(', ') }})
{%- endmacro %}
