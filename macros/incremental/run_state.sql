{% macro run_state() %}
    {#- What one dbt invocation knows of the contract's bookkeeping, shared by every model,
        hook and thread of the invocation: each model's consumed range (ledgers, per schema:
        read once, kept current by record_consumed_batches), the log's last receipted batch
        (ingested_through: read once), each model's recomputed partitions (worked out once,
        then used by both its compiled SQL and its materialization) and the incremental ranges
        recorded but not yet committed (commit_consumed_batches writes them at the end). Kept
        in dbt's `graph` (one dictionary per invocation, shared by every context) under the
        invocation's id, so
        a later invocation in the same Python process starts afresh.

        Why this is safe: one run of a schema at a time (the run lock), a model's ledger changes
        only when it commits (recorded here at once), and its children start after it. A value
        read once can only be older than the truth by what this invocation itself committed,
        which it recorded. -#}
    {% set state = graph.get('kappa_run_state') %}
    {% if state is none or state['invocation_id'] != invocation_id %}
        {% set state = {
            'invocation_id': invocation_id,
            'ledgers': {},
            'ingested_through': none,
            'recomputed_partitions': {},
            'pending_ledger_rows': {},
        } %}
        {% do graph.update({'kappa_run_state': state}) %}
    {% endif %}
    {{ return(state) }}
{% endmacro %}
