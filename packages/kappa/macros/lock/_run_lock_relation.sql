{% macro _run_lock_relation(schema_name) %}
    {#- The run lock of a schema, `<schema>.kappa_run_lock`, created on first use: one row per
        run that holds (or held, until it was released) the right to build the schema,
        partitioned by the holder (dbt's invocation id) so that a run adds and removes exactly
        its own row. -#}
    {% set relation = api.Relation.create(
        database=none, schema=schema_name, identifier='kappa_run_lock', type='table'
    ) %}
    {#- (`if not exists`: another process may create it meanwhile) -#}
    {% if execute and adapter.get_relation(none, schema_name, 'kappa_run_lock') is none %}
        {% call statement('create_run_lock') %}
            create table if not exists {{ relation }} (
                command string,
                target_name string,
                spark_application_id string,
                acquired_at timestamp,
                holder string
            )
            using parquet
            partitioned by (holder)
        {% endcall %}
        {#- known to dbt's relation cache from now on: asked again this run, no second create -#}
        {% do adapter.cache_added(relation) %}
    {% endif %}
    {{ return(relation) }}
{% endmacro %}
