{% macro batch_ledger_ddl(schema_name) %}
    {#- The statement that creates a schema's batch ledger if it is missing (see batch_ledger).
        Used by the on-run-start hook, once per run. -#}
    create table if not exists {{ schema_name }}.kappa_consumed_batches (
        last_batch_id bigint,
        refresh_mode string,
        recorded_at timestamp,
        recomputed_partitions array<string>,
        model_name string,
        first_batch_id bigint
    )
    using parquet
    partitioned by (model_name, first_batch_id)
{%- endmacro %}
