{% macro recomputed_partitions(node) %}
    {#- The partitions a recomputing model's run must rewrite, as strings: days
        ('YYYY-MM-DD', recomputed_days) for a day model, bucket numbers (recomputed_buckets) for
        a key model; none for every partition (rebuild). Called by the exact_incremental
        materialization; partition_literal() turns a value into SQL. -#}
    {% if contract_mode(node) == 'days' %}
        {{ return(recomputed_days()) }}
    {% endif %}
    {{ return(recomputed_buckets()) }}
{% endmacro %}
