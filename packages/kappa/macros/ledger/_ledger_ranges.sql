{% macro _ledger_ranges(schema_name) %}
    {#- The consumed range of every model in a schema's batch ledger, read once per invocation
        (_run_state): a dictionary from model name to its runs, first batch, last batch, the
        number of batches its runs cover and the SQL fingerprint its latest run recorded.
        _record_consumed_batches keeps it current as models commit. On-run-start reads the
        target schema's before dbt's threads start. Rows inside a compacted row's range
        (_compact_batch_ledger, killed between its two statements) are left out. A ledger
        created by an earlier version of the package gets the columns it lacks first
        (_upgrade_batch_ledger). -#}
    {% if not execute %}
        {{ return({}) }}
    {% endif %}
    {% set ledgers = kappa._run_state()['ledgers'] %}
    {% if schema_name not in ledgers %}
        {% do kappa._upgrade_batch_ledger(schema_name) %}
        {% set query %}
            select
                model_name,
                count(*) as runs,
                min(first_batch_id) as first_batch_id,
                max(last_batch_id) as last_batch_id,
                sum(last_batch_id - first_batch_id + 1) as batches,
                max_by(sql_fingerprint, first_batch_id) as sql_fingerprint
            from {{ kappa._ledger_coverage(schema_name) }}
            -- rows that a compaction killed before its end left inside a compacted row's range
            where not covered
            group by model_name
        {% endset %}
        {% set ranges = {} %}
        {% for row in run_query(query).rows %}
            {% do ranges.update({row['model_name']: {
                'runs': row['runs'] | int,
                'first_batch_id': row['first_batch_id'] | int,
                'last_batch_id': row['last_batch_id'] | int,
                'batches': row['batches'] | int,
                'sql_fingerprint': row['sql_fingerprint'],
            }}) %}
        {% endfor %}
        {#- another thread may have read and updated it meanwhile: what it recorded wins -#}
        {% do ledgers.setdefault(schema_name, {}) %}
        {% for name, value in ranges.items() %}
            {% do ledgers[schema_name].setdefault(name, value) %}
        {% endfor %}
    {% endif %}
    {{ return(ledgers[schema_name]) }}
{% endmacro %}
