{#- Where dbt builds a model or seed. The sample log's seeds (custom schema `raw`) are raw
    tables: they go to the raw schema (var raw_schema, else <target schema>_raw). Everything
    else goes to models_schema(): the version of the target's schema that var kappa_version
    names, or, by default, the version the schema serves (docs/reprocessing.md); a custom
    schema is appended to it as dbt does (`..._reference`). -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is not none and custom_schema_name | trim == 'raw' -%}
        {{ var('raw_schema', target.schema ~ '_raw') }}
    {%- elif custom_schema_name is none -%}
        {{ models_schema() }}
    {%- else -%}
        {{ models_schema() ~ '_' ~ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
