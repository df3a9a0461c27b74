{% macro json_type_check(value, json_type) %}
    {#- A predicate: the VARIANT `value` holds the JSON type `json_type` (string, integer,
        number, array). A JSON integer counts as a number; 3.0 does not count as an integer. -#}
    {%- set type_name = 'schema_of_variant(' ~ value ~ ')' -%}
    {%- if json_type == 'string' -%}
        {{ type_name }} = 'STRING'
    {%- elif json_type == 'integer' -%}
        {{ type_name }} in ('BIGINT', 'INT', 'SMALLINT', 'TINYINT')
    {%- elif json_type == 'number' -%}
        ({{ type_name }} in ('BIGINT', 'INT', 'SMALLINT', 'TINYINT', 'DOUBLE', 'FLOAT')
            or {{ type_name }} like 'DECIMAL%')
    {%- elif json_type == 'array' -%}
        {{ type_name }} like 'ARRAY%'
    {%- else -%}
        {% do exceptions.raise_compiler_error("json_type_check: unknown JSON type " ~ json_type) %}
    {%- endif -%}
{%- endmacro %}
