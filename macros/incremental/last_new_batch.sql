{% macro last_new_batch() %}
    {#- The last ingestion batch this run of the current model reads: as far as its inputs hold
        (available_through: the log's receipts for a model that reads sources). Rows of a later
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
    {#- worked out once per model and run: every in_new_batches() of the model gets the same
        bound, and the ledger queries run once -#}
    {% set memo = model.get('kappa_last_new_batch') %}
    {% if memo is none or memo[0] != invocation_id %}
        {% set memo = [invocation_id, available_through(model)] %}
        {% do model.update({'kappa_last_new_batch': memo}) %}
    {% endif %}
    {{ return(memo[1]) }}
{% endmacro %}
