{% macro _upgrade_batch_ledger(schema_name) %}
    {#- Adds to a schema's batch ledger the columns of _ledger_columns it lacks: a ledger
        created by an earlier version of the package, before `sql_fingerprint`. Its rows keep
        their values, the new column null in them (a null fingerprint matches none, so the
        next run checks its models' columns as before). Spark adds a column to a partitioned
        table before its partition columns, which is where _ledger_columns has it. Called
        once per schema and invocation (_ledger_ranges; the target schema's in on-run-start,
        before dbt's threads start). One `describe` of the ledger. -#}
    {%- set ledger = kappa._batch_ledger(schema_name) -%}
    {%- set present = adapter.get_columns_in_relation(ledger) | map(attribute='name') | map('lower') | list -%}
    {%- set missing = [] -%}
    {%- for column in kappa._ledger_columns() if column.name not in present -%}
        {%- do missing.append(column.name ~ ' ' ~ column.type) -%}
    {%- endfor -%}
    {%- if missing | length > 0 -%}
        {% call statement('upgrade_batch_ledger') %}
            alter table {{ ledger }} add columns ({{ missing | join(', ') }})
        {% endcall %}
        {{ log("Added " ~ missing | join(', ') ~ " to the batch ledger of " ~ schema_name, info=true) }}
    {%- endif -%}
{% endmacro %}
