{% macro _first_new_batch() %}
    {#- The first ingestion batch this model has not consumed yet: 1 on a full refresh (or a
        first build), else one past the last batch in its ledger. A unit test can pin it with
        the var `kappa_first_new_batch`. -#}
    {% if var('kappa_first_new_batch', none) is not none %}
        {{ return(var('kappa_first_new_batch') | int) }}
    {% endif %}
    {% if not kappa.is_incremental() %}
        {{ return(1) }}
    {% endif %}
    {{ return(kappa.consumed_through(this) + 1) }}
{% endmacro %}
