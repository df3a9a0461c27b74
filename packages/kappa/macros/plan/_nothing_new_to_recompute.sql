{% macro _nothing_new_to_recompute(first_batch_id) %}
    {#- Whether the inputs of the current recomputing model hold no batch from `first_batch_id`
        (the first it has not consumed) on: then no day or bucket is touched and its run
        writes nothing (the materialization's up-to-date case), so _recomputed_days and
        _recomputed_buckets answer an empty list without querying anything. -#}
    {{ return(first_batch_id > kappa._available_through(model)) }}
{% endmacro %}
