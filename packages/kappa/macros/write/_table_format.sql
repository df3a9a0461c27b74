{% macro _table_format() %}
    {#- The table format the model is built in: 'delta' or 'iceberg' (a lakehouse format: every
        write of the contract is one atomic commit, `create or replace table`, `insert into ...
        replace where` or `merge`), or 'parquet' (any other file_format: the package writes it
        as plain files of the session catalog, beside and renamed, or partition by partition). -#}
    {%- set file_format = config.get('file_format') -%}
    {{ return(file_format if file_format in ['delta', 'iceberg'] else 'parquet') }}
{% endmacro %}

{% macro _relation_format(relation) %}
    {#- The format of an existing table, as _table_format names formats: 'delta', 'iceberg' or
        'parquet'; none when the relation came without its provider (dbt-spark then leaves
        is_delta unset). -#}
    {%- if relation.is_delta is none -%}
        {{ return(none) }}
    {%- endif -%}
    {#- an Iceberg table of Iceberg's session catalog is listed by Spark's (`show table
        extended`) as the metastore holds it: provider hive, table_type ICEBERG among its
        properties; dbt-spark's is_iceberg looks for provider iceberg only -#}
    {%- set iceberg = relation.is_iceberg or 'table_type=ICEBERG' in (relation.information or '') -%}
    {{ return('delta' if relation.is_delta else 'iceberg' if iceberg else 'parquet') }}
{% endmacro %}
