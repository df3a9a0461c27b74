{% macro _rebuilt_since(model_names, first_batch_id) %}
    {#- Whether any of the given recomputing models was rebuilt in full (a ledger run without
        recorded partitions) in a run that consumed batch `first_batch_id` or later: then
        whatever reads them cannot trace what changed and must be rebuilt too. -#}
    {% if model_names | length == 0 %}
        {{ return(false) }}
    {% endif %}
    {% set query %}
        select count(*) as rebuilt_runs
        from {{ kappa._ledger_rows(this.schema) }}
        where
            model_name in ('{{ model_names | join("', '") }}')
            and last_batch_id >= {{ first_batch_id }}
            and recomputed_partitions is null
    {% endset %}
    {{ return(run_query(query).rows[0]['rebuilt_runs'] > 0) }}
{% endmacro %}
