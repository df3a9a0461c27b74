{% macro ledger_values(rows) %}
    {#- The rows of a ledger write as an inline table for a FROM clause (`values ... as
        recorded (...)`), with the columns model_name, first_batch_id, last_batch_id,
        refresh_mode, recomputed_partitions and recorded_at (the time of the statement).
        Shared by the immediate commit of a full refresh (record_consumed_batches), the
        end-of-run commit (commit_consumed_batches) and the invocation's view of the ledger
        (ledger_rows). -#}
    values
    {%- for row in rows %}
        ('{{ row.model_name }}', cast({{ row.first_batch_id }} as bigint), cast({{ row.last_batch_id }} as bigint),
        '{{ row.refresh_mode }}',
        {% if row.recomputed_partitions is none -%}
        cast(null as array<string>)
        {%- else -%}
        cast(array({% for value in row.recomputed_partitions %}'{{ value }}'{{ ", " if not loop.last }}{% endfor %}) as array<string>)
        {%- endif %}, current_timestamp()){{ ", " if not loop.last }}
    {%- endfor %}
    as recorded (model_name, first_batch_id, last_batch_id, refresh_mode, recomputed_partitions, recorded_at)
{%- endmacro %}
