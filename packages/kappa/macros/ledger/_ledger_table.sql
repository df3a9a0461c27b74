{% macro _ledger_columns() %}
    {#- The batch ledger's columns, in table order, defined here once for every statement that
        creates, writes or reads it: one row per run of a model, with the first and last
        ingestion batch it consumed, how (full_refresh, incremental, compacted), when, for a
        recomputing model the partitions (days or key buckets) it rewrote (null: all of them),
        and the fingerprint of the SQL that wrote the table (_sql_fingerprint; null on a
        compacted row and on rows recorded before the column existed, which _ledger_ranges
        adds to an older ledger). The last two are the partition columns. -#}
    {{ return([
        {'name': 'last_batch_id', 'type': 'bigint'},
        {'name': 'refresh_mode', 'type': 'string'},
        {'name': 'recorded_at', 'type': 'timestamp'},
        {'name': 'recomputed_partitions', 'type': 'array<string>'},
        {'name': 'sql_fingerprint', 'type': 'string'},
        {'name': 'model_name', 'type': 'string'},
        {'name': 'first_batch_id', 'type': 'bigint'},
    ]) }}
{% endmacro %}

{% macro _batch_ledger(schema_name) %}
    {#- The consumption ledger of a schema, `<schema>.kappa_consumed_batches`, created if
        missing: which ingestion batches each exact_incremental model of the schema has
        consumed, like a consumer group's committed offsets. Partitioned by model and first
        batch, and written with dynamic partition overwrite, so that models finishing at the
        same time never share a write directory, and re-recording a range replaces it.
        on_run_start() creates it before dbt's threads start (two threads creating it at once
        would collide). -#}
    {% set ledger = api.Relation.create(
        database=none, schema=schema_name, identifier='kappa_consumed_batches', type='table'
    ) %}
    {% if execute and adapter.get_relation(none, schema_name, 'kappa_consumed_batches') is none %}
        {% call statement('create_batch_ledger') %}
            create table if not exists {{ ledger }} (
                {%- for column in kappa._ledger_columns() %}
                {{ column.name }} {{ column.type }}{{ "," if not loop.last }}
                {%- endfor %}
            )
            using parquet
            partitioned by (model_name, first_batch_id)
        {% endcall %}
        {#- known to dbt's relation cache from now on: asked again this run, no second create -#}
        {% do adapter.cache_added(ledger) %}
    {% endif %}
    {{ return(ledger) }}
{% endmacro %}

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

{% macro _ledger_insert(schema_name, rows, model_name=none) %}
    {#- The statement that writes ledger rows into a schema's batch ledger, each replacing its
        (model, first batch) partition. With `model_name`, every row is that model's and the
        model is a static partition value, so Spark looks up only this model's partitions of
        the ledger (a full refresh's commit); first_batch_id stays dynamic: a dynamic
        overwrite stages its files in a directory of its own job, whereas a fully static one
        uses the table's shared `_temporary` directory, where two models committing at once
        (two threads) break each other's write. Without it both partition columns are dynamic
        (the end-of-run commit and the compaction: one listing of the ledger's partitions per
        run). -#}
    {%- set names = kappa._ledger_columns() | map(attribute='name') | list -%}
    insert overwrite table {{ kappa._batch_ledger(schema_name) }}
    {%- if model_name is none %}
    partition (model_name, first_batch_id)
    select {{ names | join(', ') }}
    {%- else %}
    partition (model_name = '{{ model_name }}', first_batch_id)
    select {{ names | reject('equalto', 'model_name') | join(', ') }}
    {%- endif %}
    from {{ kappa._ledger_values(rows) }}
{%- endmacro %}
