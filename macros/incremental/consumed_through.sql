{% macro consumed_through(relation) %}
    {#- The last ingestion batch the model behind `relation` has consumed (0 if none). Its
        ledger ranges must tile 1..N with no gap or overlap; anything else is an error, never
        passed over. -#}
    {% if not execute %}
        {{ return(0) }}
    {% endif %}
    {#- asked several times per model (each in_new_batches(), the materialization, every
        parent in available_through): the ledger is read once per relation and model context.
        Safe: a model's own ledger changes only when it commits, after its last question, and
        its parents have committed before it starts. -#}
    {% set key = relation.schema ~ '.' ~ relation.identifier %}
    {% set memo = model.get('kappa_consumed_through') if model is mapping else none %}
    {% if memo is not none and memo[0] == invocation_id and key in memo[1] %}
        {{ return(memo[1][key]) }}
    {% endif %}
    {% set ledger = batch_ledger(relation.schema) %}
    {% set query %}
        select
            count(*) as runs,
            coalesce(min(first_batch_id), 0) as first_batch_id,
            coalesce(max(last_batch_id), 0) as last_batch_id,
            coalesce(sum(last_batch_id - first_batch_id + 1), 0) as batches
        from {{ ledger }}
        where model_name = '{{ relation.identifier }}'
    {% endset %}
    {% set row = run_query(query).rows[0] %}
    {% if row['runs'] != 0 and (row['first_batch_id'] != 1 or row['batches'] != row['last_batch_id']) %}
        {% do exceptions.raise_compiler_error(
            "The batch ledger of " ~ relation ~ " is not one unbroken range 1.." ~ row['last_batch_id']
            ~ " (it starts at " ~ row['first_batch_id'] ~ " and covers " ~ row['batches']
            ~ " batches): a gap in consumption. Rebuild it with `dbt build --full-refresh --select "
            ~ relation.identifier ~ "+`."
        ) %}
    {% endif %}
    {% set value = row['last_batch_id'] | int %}
    {% if model is mapping %}
        {% if memo is none or memo[0] != invocation_id %}
            {% set memo = [invocation_id, {}] %}
            {% do model.update({'kappa_consumed_through': memo}) %}
        {% endif %}
        {% do memo[1].update({key: value}) %}
    {% endif %}
    {{ return(value) }}
{% endmacro %}
