{% macro _batch_ledger(schema_name) %}
    {#- The batch ledger of a schema, `<schema>.kappa_batch_ledger`, created if missing:
        which ingestion batches each exact_incremental model of the schema has consumed, like
        a consumer group's committed offsets. Partitioned by model and first batch, and
        written with dynamic partition overwrite, so that models finishing at the same time
        never share a write directory, and re-recording a range replaces it. on_run_start()
        creates it before dbt's threads start (two threads creating it at once would collide).
        A ledger an earlier version of the package kept under its earlier name,
        `kappa_consumed_batches`, is renamed instead, its rows kept (one `alter table`, once). -#}
    {% set ledger = api.Relation.create(
        database=none, schema=schema_name, identifier='kappa_batch_ledger', type='table'
    ) %}
    {% if execute and adapter.get_relation(none, schema_name, 'kappa_batch_ledger') is none %}
        {% set earlier = adapter.get_relation(none, schema_name, 'kappa_consumed_batches') %}
        {% if earlier is not none %}
            {% call statement('rename_batch_ledger') %}
                alter table {{ earlier }} rename to {{ ledger }}
            {% endcall %}
            {% do adapter.cache_renamed(earlier, ledger) %}
            {{ log("Renamed the batch ledger of " ~ schema_name
                ~ " from kappa_consumed_batches to kappa_batch_ledger", info=true) }}
        {% else %}
            {% call statement('create_batch_ledger') %}
                create table if not exists {{ ledger }} (
                    {%- for column in kappa._ledger_columns() %}
                    {{ column.name }} {{ column.type }}{{ "," if not loop.last }}
                    {%- endfor %}
                )
                using parquet
                partitioned by (model_name, first_batch_id)
            {% endcall %}
            {#- known to dbt's relation cache from now on: asked again this run, no second
                create -#}
            {% do adapter.cache_added(ledger) %}
        {% endif %}
    {% endif %}
    {{ return(ledger) }}
{% endmacro %}
