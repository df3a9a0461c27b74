{% macro record_consumed_batches(relation, first_batch_id, last_batch_id, full_refresh, recomputed_partitions=none) %}
    {#- Commit the batches a run consumed to the ledger, after the model's table is written.
        A full refresh replaces the model's ledger; an incremental run adds one range. A model
        that recomputes days also records which days it rewrote (none = every day), so that its
        own downstream models know which of their days changed. A run that dies before this
        point is redone in full next time, which rewrites the same partitions (and days):
        nothing is skipped or doubled. The invocation's copy of the ledger (ledger_ranges) is
        updated with it, for the models downstream. -#}
    {% set ledger = batch_ledger(relation.schema) %}
    {% set ranges = ledger_ranges(relation.schema) %}
    {% if full_refresh %}
        {% call statement('forget_consumed_batches') %}
            alter table {{ ledger }} drop if exists partition (model_name = '{{ relation.identifier }}')
        {% endcall %}
    {% endif %}
    {% if first_batch_id <= last_batch_id %}
        {#- the model's name is a static partition value, so that Spark looks up only this
            model's partitions of the ledger: with both partition columns dynamic it lists every
            partition from the metastore on each commit, a cost that grows with every run of
            every model (a commit took 0.2 s at 83 partitions, 0.7 s at 3,000; 0.17 s with the
            name static). first_batch_id stays dynamic: a dynamic overwrite stages its files in
            a directory of its own job, whereas a fully static one uses the table's shared
            `_temporary` directory, where two models committing at once (two threads) break
            each other's write. -#}
        {% call statement('record_consumed_batches') %}
            insert overwrite table {{ ledger }}
            partition (model_name = '{{ relation.identifier }}', first_batch_id)
            select
                cast({{ last_batch_id }} as bigint) as last_batch_id,
                '{{ "full_refresh" if full_refresh else "incremental" }}' as refresh_mode,
                current_timestamp() as recorded_at,
                {% if recomputed_partitions is none -%}
                cast(null as array<string>)
                {%- else -%}
                cast(array({% for value in recomputed_partitions %}'{{ value }}'{{ ", " if not loop.last }}{% endfor %}) as array<string>)
                {%- endif %} as recomputed_partitions,
                cast({{ first_batch_id }} as bigint) as first_batch_id
        {% endcall %}
        {% set before = ranges.get(relation.identifier) %}
        {% if full_refresh or before is none %}
            {% set after = {'runs': 1, 'first_batch_id': first_batch_id, 'last_batch_id': last_batch_id,
                'batches': last_batch_id - first_batch_id + 1} %}
        {% else %}
            {% set after = {'runs': before['runs'] + 1, 'first_batch_id': before['first_batch_id'],
                'last_batch_id': [before['last_batch_id'], last_batch_id] | max,
                'batches': before['batches'] + last_batch_id - first_batch_id + 1} %}
        {% endif %}
        {% do ranges.update({relation.identifier: after}) %}
    {% elif full_refresh %}
        {% do ranges.pop(relation.identifier, none) %}
    {% endif %}
{% endmacro %}
