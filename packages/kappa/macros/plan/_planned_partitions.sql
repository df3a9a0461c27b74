{% macro _planned_partitions(node) %}
    {#- The partitions a recomputing model's run must rewrite, as strings: days
        ('YYYY-MM-DD', _recomputed_days) for a day model, bucket numbers (_recomputed_buckets) for
        a key model; none for every partition (rebuild). Called by the exact_incremental
        materialization; kappa._partition_literal() turns a value into SQL. -#}
    {% if kappa._contract_mode(node) == 'days' %}
        {{ return(kappa._recomputed_days()) }}
    {% endif %}
    {{ return(kappa._recomputed_buckets()) }}
{% endmacro %}
