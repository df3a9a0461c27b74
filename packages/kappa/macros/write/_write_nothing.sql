{% macro _write_nothing(reason) %}
    {#- Nothing to write (the model is up to date, or the new batches touch none of its
        partitions): dbt's noop_statement gives the run its result, `reason`, without a
        statement to Spark (the run's target/run file holds it as a comment). -#}
    {%- call noop_statement('main', reason) -%}
        -- {{ reason }}: nothing to write
    {%- endcall -%}
{% endmacro %}
