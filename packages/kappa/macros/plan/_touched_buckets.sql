{% macro _touched_buckets(first_batch_id) %}
    {#- For the current key-recomputing model, what its upstream rows changed since batch
        `first_batch_id` touch: {'queries': SQL queries of a column `bucket` each, 'parents':
        the key-recomputing parents whose ledger they read}. For an upstream model partitioned
        by ingestion batch, its rows in the batches this model has not consumed, by the model's
        `recompute_key` column (which every upstream model must have); for an upstream
        key-recomputing model with the same key, the buckets it recomputed in runs that consumed
        those batches (from the ledger). A parent of days or another key stops the run with one
        line. -#}
    {% set key = model.config.get('recompute_key') %}
    {% set touched = [] %}
    {% set key_parents = [] %}
    {% for parent in kappa._traced_parents(model, 'keys') %}
        {% if kappa._contract_mode(parent) == 'batches' %}
            {% set relation = api.Relation.create(
                database=none, schema=parent.schema, identifier=parent.alias, type='table'
            ) %}
            {% do touched.append(
                "select " ~ kappa.key_bucket(key) ~ " as bucket from " ~ relation
                ~ " where " ~ kappa._batch_column() ~ " >= " ~ first_batch_id
            ) %}
        {% elif kappa._contract_mode(parent) == 'keys' and parent.config.get('recompute_key') == key %}
            {% do key_parents.append(parent.alias) %}
            {% do touched.append(
                "select cast(bucket as int) as bucket from (select explode(recomputed_partitions) as bucket"
                ~ " from " ~ kappa._ledger_rows(this.schema) ~ " where model_name = '" ~ parent.alias
                ~ "' and last_batch_id >= " ~ first_batch_id ~ ")"
            ) %}
        {% else %}
            {% do exceptions.raise_compiler_error(
                model.name ~ " recomputes keys of " ~ key ~ " but reads " ~ parent.name ~ ", which recomputes "
                ~ (parent.config.get('recompute_key') or 'days') ~ ": a changed day or another key cannot"
                ~ " be traced to keys of " ~ key ~ ". Read the staged model instead."
            ) %}
        {% endif %}
    {% endfor %}
    {{ return({'queries': touched, 'parents': key_parents}) }}
{% endmacro %}
