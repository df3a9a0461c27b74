{% macro _check_model_columns(existing_relation) %}
    {#- Stop an incremental run of a model whose columns are no longer its table's: a column
        added to the model, dropped from it, or of another type. An incremental run writes only
        its new rows (batches, days or key buckets) and selects the table's columns from the
        model's rows, so it would quietly leave a new column out, or fill the table with rows of
        two shapes; the table would then not equal a full refresh. The contract admits one way
        out, a rebuild of the model and of everything built from it, and the error says how.
        (dbt's own incremental models have `on_schema_change`; every mode but 'fail' would
        break the contract, so this is 'fail', always.)

        The model's columns come from Spark's `describe query` of its compiled SQL, which
        analyses the query without running it (tens of milliseconds); the table's from
        `describe`. Compared by name (case-insensitive) and type, not by position: the writes
        select by name, and a partitioned parquet table keeps its partition column last.
        Returns the table's columns (as adapter.get_columns_in_relation gives them), which the
        write then selects, so that the table is described once per run. -#}
    {%- set model_columns = kappa._model_columns() -%}
    {%- do kappa._check_partition_column(model_columns) -%}
    {%- set columns = adapter.get_columns_in_relation(existing_relation) -%}
    {%- set table_columns = {} -%}
    {%- for column in columns -%}
        {%- do table_columns.update({column.name | lower: column.dtype | lower}) -%}
    {%- endfor -%}
    {%- set differences = [] -%}
    {%- for name, type in model_columns.items() if name not in table_columns -%}
        {%- do differences.append("new in the model: " ~ name ~ " (" ~ type ~ ")") -%}
    {%- endfor -%}
    {%- for name in table_columns if name not in model_columns -%}
        {%- do differences.append("gone from the model: " ~ name) -%}
    {%- endfor -%}
    {%- for name, type in model_columns.items()
        if name in table_columns and table_columns[name] != type -%}
        {%- do differences.append(
            name ~ " is " ~ table_columns[name] ~ " in the table, " ~ type ~ " in the model") -%}
    {%- endfor -%}
    {%- if differences -%}
        {% do exceptions.raise_compiler_error(
            existing_relation ~ " has other columns than its model now ("
            ~ differences | join("; ") ~ "). An incremental run writes only new rows, so the "
            ~ "table would no longer equal a full refresh. Rebuild it and what is built from it: "
            ~ "dbt build --full-refresh --select " ~ model.name ~ "+"
        ) %}
    {%- endif -%}
    {{ return(columns) }}
{% endmacro %}
