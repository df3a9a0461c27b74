{% macro _write_ledger_rows(statement_name, schema_name, rows, model_name=none) %}
    {#- Writes ledger rows into a schema's batch ledger (_ledger_insert), each replacing its
        (model, first batch) partition: as statement `statement_name`, after setting the
        session's partition overwrite mode to dynamic on the same connection, so that the
        overwrite replaces those partitions only, whatever the profile sets (in static mode
        an `insert overwrite` with dynamic partition columns would replace the whole ledger). -#}
    {%- do kappa._dynamic_partition_overwrite() -%}
    {%- call statement(statement_name) -%}
        {{ kappa._ledger_insert(schema_name, rows, model_name) }}
    {%- endcall -%}
{% endmacro %}
