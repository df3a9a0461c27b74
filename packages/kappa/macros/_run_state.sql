{% macro _run_state() %}
    {#- What one dbt invocation knows of the contract's bookkeeping, shared by every model, hook
        and thread of the invocation: each schema's ledger ranges (read once, kept current as
        models record), the log's last receipted batch (read once, and a refusal of its
        receipts' counts, _check_receipt_counts), each model's planned
        partitions and last batch (worked out once, then used by both its compiled SQL and its
        materialization), the incremental ranges recorded but not yet committed, and what each
        recomputing model recomputed (reported at the run's end).

        Why `graph`: dbt gives a model's SQL, its materialization and the run's hooks no shared
        object but the `graph` context variable, one dictionary per invocation handed to every
        context; a key of our own in it, stamped with the invocation id, is the most stable
        place dbt offers (a later invocation in the same Python process starts afresh). Safe
        because one run of a schema goes at a time (the run lock), a model's ledger changes
        only when it records (here, at once), and its children start after it. -#}
    {% set state = graph.get('kappa_run_state') %}
    {% if state is none or state['invocation_id'] != invocation_id %}
        {% set state = {
            'invocation_id': invocation_id,
            'ledgers': {},
            'ingested_through': none,
            'receipts_refusal': none,
            'planned_partitions': {},
            'last_new_batch': {},
            'pending_ledger_rows': {},
            'recomputed': [],
        } %}
        {% do graph.update({'kappa_run_state': state}) %}
    {% endif %}
    {{ return(state) }}
{% endmacro %}
