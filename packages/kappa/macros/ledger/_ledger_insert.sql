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
