{% macro upgrade_batch_ledger(schema_name) %}
    {#- Bring a ledger made by an earlier version of the project up to date (run once per dbt
        invocation by an on-run-start hook, after the ledger exists): ledgers from before
        day-recomputing models lack `recomputed_partitions`. Adding it as a column keeps every
        recorded range; null there reads as "every day", which is right for what was recorded. -#}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% set ledger = adapter.get_relation(none, schema_name, 'kappa_consumed_batches') %}
    {% if ledger is not none %}
        {% set columns = adapter.get_columns_in_relation(ledger) | map(attribute='name') | list %}
        {% if 'recomputed_partitions' not in columns %}
            {% do log("Upgrading the batch ledger " ~ ledger ~ ": adding column recomputed_partitions", info=true) %}
            {% do run_query("alter table " ~ ledger ~ " add columns (recomputed_partitions array<string>)") %}
        {% endif %}
    {% endif %}
    {{ return('') }}
{% endmacro %}
