{% macro in_new_batches(batch_column) %}
    {#- A predicate on `batch_column` (an ingestion batch id) that keeps the rows of batches
        this model has not consumed yet, up to the last batch its inputs hold (all of those on
        a full refresh). New input is found by what was ingested, never by time. The upper
        bound is written into the SQL with a marker (`kappa_last_new_batch=N`) that the
        exact_incremental materialization reads, so the ledger records exactly the batches the
        SQL read, even when a receipt lands while the model runs. -#}
    {%- set last_batch_id = last_new_batch() -%}
    {{ batch_column }} between {{ first_new_batch() }} and {{ last_batch_id }} /* kappa_last_new_batch={{ last_batch_id }} */
{%- endmacro %}
