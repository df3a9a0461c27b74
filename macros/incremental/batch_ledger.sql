{% macro batch_ledger(schema_name) %}
    {#- The consumption ledger of a schema: which ingestion batches each exact_incremental model
        of the schema has consumed, one row per run (first and last batch of the run), and for a
        model that recomputes days, which days the run rewrote (null: all of them, as after a
        full refresh). Like a consumer group's committed offsets. A model's older runs are
        merged into one row with refresh_mode 'compacted' (compact_batch_ledger), so the
        ledger does not grow with every run. Partitioned by model and first batch, and written
        with dynamic partition overwrite, so that models finishing at the same time never share
        a write directory, and re-recording a range replaces it. The on-run-start hook creates
        it before dbt's threads start (two threads creating it at once would collide); this
        creates it too where no hook ran. -#}
    {% set ledger = api.Relation.create(
        database=none, schema=schema_name, identifier='kappa_consumed_batches', type='table'
    ) %}
    {% if execute and adapter.get_relation(none, schema_name, 'kappa_consumed_batches') is none %}
        {% call statement('create_batch_ledger') %}
            {{ batch_ledger_ddl(schema_name) }}
        {% endcall %}
    {% endif %}
    {{ return(ledger) }}
{% endmacro %}
