{% macro in_new_batches(batch_column) %}
    {#- A predicate on `batch_column` (an ingestion batch id) that keeps the rows of batches
        this model has not consumed yet: all rows on a full refresh. New input is found by
        what was ingested, never by time. -#}
    {{ batch_column }} >= {{ first_new_batch() }}
{%- endmacro %}
