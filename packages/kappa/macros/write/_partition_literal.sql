{% macro _partition_literal(node, value) %}
    {#- A partition value of a recomputing model as a SQL literal of its partition column: a date
        for a day model, an integer for a key model's bucket. -#}
    {%- if kappa._contract_mode(node) == 'days' -%}
        date '{{ value }}'
    {%- else -%}
        {{ value | int }}
    {%- endif -%}
{%- endmacro %}
