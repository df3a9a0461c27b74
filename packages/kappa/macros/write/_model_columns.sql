{% macro _model_columns() %}
    {#- The model's columns, name (lower case) to type, from Spark's `describe query` of its
        compiled SQL, which analyses the query without running it (tens of milliseconds). -#}
    {%- set described = run_query('describe query ' ~ compiled_code) -%}
    {%- set model_columns = {} -%}
    {%- for row in described.rows -%}
        {%- do model_columns.update({row[0] | lower: row[1] | lower}) -%}
    {%- endfor -%}
    {{ return(model_columns) }}
{% endmacro %}
