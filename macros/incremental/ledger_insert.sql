{% macro ledger_insert(schema_name, rows) %}
    {#- The statement that writes ledger rows (dictionaries as ledger_values takes them) into a
        schema's batch ledger, each replacing its (model, first batch) partition: dynamic on
        both partition columns. Shared by the end-of-run commit (commit_consumed_batches) and
        the compaction's merged rows (compact_batch_ledger). -#}
    insert overwrite table {{ batch_ledger(schema_name) }}
    partition (model_name, first_batch_id)
    select
        last_batch_id, refresh_mode, recorded_at, recomputed_partitions,
        model_name, first_batch_id
    from {{ ledger_values(rows) }}
{%- endmacro %}
