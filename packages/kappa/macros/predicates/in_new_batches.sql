{% macro in_new_batches(batch_column) %}
    {#- A predicate on `batch_column` (an ingestion batch id) that keeps the rows of batches
        this model has not consumed yet, up to the last batch its inputs hold (every batch on a
        full refresh). New input is found by what was ingested, never by time. The bound is
        worked out once per model and run (_last_new_batch), so the ledger records exactly the
        batches the SQL read, even when a receipt lands while the model runs; the comment shows
        it in the compiled SQL. -#}
    {{- kappa._require_mode('in_new_batches', 'batches') -}}
    {%- call kappa._run_specific() %}
        {%- set last_batch_id = kappa._last_new_batch() -%}
        {{ batch_column }} between {{ kappa._first_new_batch() }} and {{ last_batch_id }} /* kappa: through batch {{ last_batch_id }} */
    {%- endcall %}
{%- endmacro %}
