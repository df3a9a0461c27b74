{% macro _buckets_touched(queries) %}
    {#- The key buckets `queries` (_touched_buckets) touch, distinct, in number order. -#}
    {% set buckets_query %}
        select distinct cast(bucket as string) as bucket
        from ({{ queries | join(' union all ') }}) as touched
        where bucket is not null
        order by cast(bucket as int)
    {% endset %}
    {{ return(run_query(buckets_query).columns[0].values() | list) }}
{% endmacro %}
