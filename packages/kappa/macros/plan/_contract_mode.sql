{% macro _contract_mode(node) %}
    {#- How an exact_incremental model keeps up with the log, read from its partitioning:
        'batches' when it is partitioned by its batch column (_batch_column: `_ingestion_batch_id`) first (each run appends the
        rows of its new batches), 'days' when it is partitioned by one date column, the UTC day of
        its `event_time` (each run recomputes the days that new data touches), 'keys' when it is
        partitioned by one bucket column, kappa.key_bucket() of its `recompute_key` config (each run
        recomputes the keys of the buckets that new data touches: current state and history per
        user, order or product). Anything else is an error naming the model. -#}
    {% set partition_by = node.config.get('partition_by') %}
    {% set columns = [partition_by] if partition_by is string else (partition_by or []) %}
    {% if columns | length > 0 and columns[0] == kappa._batch_column() %}
        {{ return('batches') }}
    {% endif %}
    {% if columns | length == 1 and node.config.get('recompute_key') %}
        {{ return('keys') }}
    {% endif %}
    {% if columns | length == 1 and node.config.get('event_time') %}
        {{ return('days') }}
    {% endif %}
    {% do exceptions.raise_compiler_error(
        node.name ~ ": an exact_incremental model is partitioned either by " ~ kappa._batch_column() ~ " first"
        ~ " (partition_by=['" ~ kappa._batch_column() ~ "', ...]: it appends the rows of new batches) or by"
        ~ " one date column, the UTC day of its event_time (partition_by=['<day column>'] and"
        ~ " event_time='<timestamp column>': it recomputes the days new data touches) or by one"
        ~ " bucket column, kappa.key_bucket(<key>) (partition_by=['<bucket column>'] and"
        ~ " recompute_key='<key column>': it recomputes the keys new data touches); got"
        ~ " partition_by=" ~ partition_by ~ ", event_time=" ~ node.config.get('event_time')
    ) %}
{% endmacro %}
