{% macro _recomputed_partitions(mode) %}
    {#- The partitions of the current recomputing model that this run must recompute, for
        `mode` 'days' (sorted 'YYYY-MM-DD' strings, _recomputed_days) or 'keys' (sorted bucket
        numbers as strings, _recomputed_buckets); none for every partition (a full refresh, a
        first build, or an upstream recomputing model that was itself rebuilt in full).

        The skeleton both modes share: a var pins the list (unit tests); worked out once per
        model and invocation (_run_state: its SQL and its materialization must agree, and the
        ledger is read once); nothing new, nothing to recompute; then the mode's tracing of its
        upstream rows to partitions (_touched_days, _touched_buckets: queries of touched
        partitions, and the recomputing parents whose ledger they read), a rebuild when such a
        parent was rebuilt in full since (_rebuilt_since), and the mode's list of the touched
        ones (_days_touched, _buckets_touched). -#}
    {% set pinned = var('kappa_recompute_days' if mode == 'days' else 'kappa_recompute_buckets', none) %}
    {% if pinned is not none %}
        {{ return(pinned | map('string') | list) }}
    {% endif %}
    {% if not execute or not kappa.is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {% set memo = kappa._run_state()['planned_partitions'] %}
    {% if model.unique_id in memo %}
        {{ return(memo[model.unique_id]) }}
    {% endif %}
    {% set first_batch_id = kappa.consumed_through(this) + 1 %}
    {% if kappa._nothing_new_to_recompute(first_batch_id) %}
        {% do memo.update({model.unique_id: []}) %}
        {{ return([]) }}
    {% endif %}
    {% set traced = kappa._touched_days(first_batch_id) if mode == 'days'
        else kappa._touched_buckets(first_batch_id) %}
    {% if kappa._rebuilt_since(traced['parents'], first_batch_id) %}
        {% do memo.update({model.unique_id: none}) %}
        {{ return(none) }}
    {% endif %}
    {% if traced['queries'] | length == 0 %}
        {% do memo.update({model.unique_id: []}) %}
        {{ return([]) }}
    {% endif %}
    {% set partitions = kappa._days_touched(traced['queries']) if mode == 'days'
        else kappa._buckets_touched(traced['queries']) %}
    {% do memo.update({model.unique_id: partitions}) %}
    {{ return(partitions) }}
{% endmacro %}
