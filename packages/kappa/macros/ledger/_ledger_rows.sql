{% macro _ledger_rows(schema_name) %}
    {#- A schema's batch ledger as this invocation knows it, for a FROM clause: the ledger
        table's rows plus the incremental ranges that this invocation's models have recorded
        and _commit_consumed_batches has not written yet. Columns: model_name, first_batch_id,
        last_batch_id, refresh_mode, recomputed_partitions. What a model's downstream models
        read of its runs (_recomputed_days, _recomputed_buckets, _rebuilt_since). -#}
    {%- set columns = kappa._ledger_columns() | map(attribute='name') | join(', ') -%}
    {%- set pending = kappa._run_state()['pending_ledger_rows'].get(schema_name, []) -%}
    (
        select {{ columns }}
        from {{ kappa._batch_ledger(schema_name) }}
        {%- if pending | length > 0 %}
        union all
        select {{ columns }}
        from {{ kappa._ledger_values(pending) }}
        {%- endif %}
    ) as kappa_ledger
{%- endmacro %}
