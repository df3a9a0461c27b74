{% macro _ledger_coverage(schema_name) %}
    {#- A schema's batch ledger for a FROM clause, each row with `covered`: true for a row that
        lies inside its model's compacted row (a row _compact_batch_ledger merged but, killed
        between its two statements, did not drop). Such a row is not part of the model's
        consumed range: _ledger_ranges leaves it out and the next compaction drops it. One rule
        for both, so they never disagree on which rows count. -#}
    (
        select
            *,
            first_batch_id > 1
            and last_batch_id <= coalesce(max(case when refresh_mode = 'compacted' then last_batch_id end)
                over (partition by model_name), 0) as covered
        from {{ kappa._batch_ledger(schema_name) }}
    ) as kappa_ledger_coverage
{%- endmacro %}
