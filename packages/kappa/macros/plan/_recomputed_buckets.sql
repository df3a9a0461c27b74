{% macro _recomputed_buckets() %}
    {#- The key buckets of the current key-recomputing model that this run must recompute: a
        sorted list of bucket numbers (as strings), or none for every bucket (a full refresh, a
        first build, or an upstream key model that was itself rebuilt in full).

        A bucket is touched when an upstream row that changed since the model's last run carries
        a key of it: for an upstream model partitioned by ingestion batch, its rows in the
        batches this model has not consumed (by the model's `recompute_key` column, which every
        upstream model must have); for an upstream key-recomputing model with the same key, the
        buckets it recomputed in runs that consumed those batches (from the ledger). Seeds are
        not traced. The var `kappa_recompute_buckets` pins the list (unit tests). -#}
    {% if var('kappa_recompute_buckets', none) is not none %}
        {{ return(var('kappa_recompute_buckets') | map('string') | list) }}
    {% endif %}
    {% if not execute or not kappa.is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {#- worked out once per model and invocation (_run_state): its SQL and its materialization
        must agree, and the ledger is read once -#}
    {% set memo = kappa._run_state()['planned_partitions'] %}
    {% if model.unique_id in memo %}
        {{ return(memo[model.unique_id]) }}
    {% endif %}
    {% set first_batch_id = kappa.consumed_through(this) + 1 %}
    {% if kappa._nothing_new_to_recompute(first_batch_id) %}
        {% do memo.update({model.unique_id: []}) %}
        {{ return([]) }}
    {% endif %}
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
    {% if kappa._rebuilt_since(key_parents, first_batch_id) %}
        {% do memo.update({model.unique_id: none}) %}
        {{ return(none) }}
    {% endif %}
    {% if touched | length == 0 %}
        {% do memo.update({model.unique_id: []}) %}
        {{ return([]) }}
    {% endif %}
    {% set buckets_query %}
        select distinct cast(bucket as string) as bucket
        from ({{ touched | join(' union all ') }}) as touched
        where bucket is not null
        order by cast(bucket as int)
    {% endset %}
    {% do memo.update({model.unique_id: run_query(buckets_query).columns[0].values() | list}) %}
    {{ return(memo[model.unique_id]) }}
{% endmacro %}
