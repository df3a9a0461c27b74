{% macro _write_batches(table_columns, first_batch_id, last_batch_id) %}
    {#- A batches model's run: the rows of its new batches (first_batch_id..last_batch_id)
        replace whatever the table holds for them, so a rerun rewrites instead of appending.
        The rows are selected straight from the model's query in the table's column order
        (`table_columns`, partition columns last): no temporary view of the new rows and no
        second describe of the table, as dbt-spark's insert_overwrite strategy would issue.

        - Delta and Iceberg: `insert into ... replace where <batch> between first and last`,
          one atomic commit (Delta checks that every row written is in the range; Iceberg
          does not, and the rows are the new batches' by the model's filter, in_new_batches).
        - Parquet: `insert overwrite` with dynamic partition overwrite: the other batches stay. -#}
    {%- set columns = table_columns | map(attribute='quoted') | join(', ') -%}
    {%- if kappa._table_format() != 'parquet' -%}
        {%- call statement('main') -%}
            insert into {{ this }}
            replace where {{ kappa._batch_column() }} between {{ first_batch_id }} and {{ last_batch_id }}
            select {{ columns }}
            from (
                {{ compiled_code }}
            ) as model_rows
        {%- endcall -%}
    {%- else -%}
        {%- do kappa._dynamic_partition_overwrite() -%}
        {%- call statement('main') -%}
            insert overwrite table {{ this }}
            {{ partition_cols(label="partition") }}
            select {{ columns }}
            from (
                {{ compiled_code }}
            ) as model_rows
        {%- endcall -%}
    {%- endif -%}
    {{ log(model.name ~ ": ingestion batches " ~ first_batch_id ~ ".." ~ last_batch_id) }}
{% endmacro %}
