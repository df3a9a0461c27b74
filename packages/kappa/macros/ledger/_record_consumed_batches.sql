{% macro _record_consumed_batches(relation, first_batch_id, last_batch_id, full_refresh, recomputed_partitions=none, sql_fingerprint=none) %}
    {#- Record the batches a run of a model consumed, after the model's table is written. A
        model that recomputes days or buckets also records which it rewrote (none = all of
        them), so that its own downstream models know what changed; and every model the
        fingerprint of the SQL its table now has the columns of (_sql_fingerprint). The
        invocation's copy of the ledger (_ledger_ranges) is updated at once, for the models
        downstream.

        - A full refresh is committed to the ledger table here and now: the model's earlier
          ranges are dropped and its one range written (rare; downstream models must learn of
          a rebuild even if the run dies before its end).
        - An incremental range waits, with every other incremental range of the invocation, for
          _commit_consumed_batches (on-run-end), which writes them in one statement: one ledger
          write per run instead of one per model (each cost a Spark job and a metastore update,
          about a tenth of an incremental run's statement time at 10M). Until then the models
          of this invocation read it through _ledger_rows. A run that dies before its end
          commits none of its incremental ranges: the next run redoes them, rewriting the same
          partitions, as when a model died between its write and its commit. -#}
    {% set ranges = kappa._ledger_ranges(relation.schema) %}
    {% if full_refresh %}
        {% set ledger = kappa._batch_ledger(relation.schema) %}
        {% call statement('forget_consumed_batches') %}
            alter table {{ ledger }} drop if exists partition (model_name = '{{ relation.identifier }}')
        {% endcall %}
    {% endif %}
    {% if first_batch_id <= last_batch_id %}
        {% set row = {
            'model_name': relation.identifier,
            'first_batch_id': first_batch_id,
            'last_batch_id': last_batch_id,
            'refresh_mode': 'full_refresh' if full_refresh else 'incremental',
            'recomputed_partitions': recomputed_partitions,
            'sql_fingerprint': sql_fingerprint,
        } %}
        {% if full_refresh %}
            {#- (the model's name a static partition value: see _ledger_insert) -#}
            {% do kappa._write_ledger_rows(
                'record_consumed_batches', relation.schema, [row], model_name=relation.identifier
            ) %}
        {% else %}
            {% do kappa._run_state()['pending_ledger_rows'].setdefault(relation.schema, []).append(row) %}
        {% endif %}
        {% set before = ranges.get(relation.identifier) %}
        {% if full_refresh or before is none %}
            {% set after = {'runs': 1, 'first_batch_id': first_batch_id, 'last_batch_id': last_batch_id,
                'batches': last_batch_id - first_batch_id + 1, 'sql_fingerprint': sql_fingerprint} %}
        {% else %}
            {% set after = {'runs': before['runs'] + 1, 'first_batch_id': before['first_batch_id'],
                'last_batch_id': [before['last_batch_id'], last_batch_id] | max,
                'batches': before['batches'] + last_batch_id - first_batch_id + 1,
                'sql_fingerprint': sql_fingerprint} %}
        {% endif %}
        {% do ranges.update({relation.identifier: after}) %}
    {% elif full_refresh %}
        {% do ranges.pop(relation.identifier, none) %}
    {% endif %}
{% endmacro %}
