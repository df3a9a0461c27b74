{% macro _partition_column(node) %}
    {#- The first partition column of a model (`partition_by` as a string or a list): the day
        column of a days model, the bucket column of a keys model. -#}
    {%- set partition_by = node.config.get('partition_by') -%}
    {{ return(partition_by if partition_by is string else partition_by[0]) }}
{%- endmacro %}
