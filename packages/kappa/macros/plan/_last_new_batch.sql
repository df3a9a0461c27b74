{% macro _last_new_batch() %}
    {#- The last ingestion batch this run of the current model reads: as far as its inputs hold
        (_available_through: the log's receipts for a model that reads sources). Rows of a later
        batch (one that ingestion is still writing, or one it was killed in before writing the
        batch's receipt) are left for a later run. The var `kappa_last_new_batch` pins it; a unit
        test (whose inputs are fixtures, with no receipts) reads every batch unless it pins it. -#}
    {% if var('kappa_last_new_batch', none) is not none %}
        {{ return(var('kappa_last_new_batch') | int) }}
    {% endif %}
    {% if not execute %}
        {{ return(0) }}
    {% endif %}
    {% if model.resource_type == 'unit_test' %}
        {{ return(2147483647) }}
    {% endif %}
    {#- worked out once per model and run (_run_state): every in_new_batches() of the model and
        its materialization get the same bound, and the ledger is read once -#}
    {% set memo = kappa._run_state()['last_new_batch'] %}
    {% if model.unique_id not in memo %}
        {% do memo.update({model.unique_id: kappa._available_through(model)}) %}
    {% endif %}
    {{ return(memo[model.unique_id]) }}
{% endmacro %}
