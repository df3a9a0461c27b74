{% macro _key_merge() %}
    {#- The model's merge settings, or none: a keys model on Delta or Iceberg with
        `incremental_strategy='merge'` and its `unique_key` (a column or a list: what identifies
        a row; the rows of one unique key have one recompute_key) merges its recomputed key
        buckets into its table (_merge_partitions) instead of replacing them whole. Any other
        model: none (replaced, as _write_partitions says). A merge asked of a model it cannot
        serve stops the run in one line naming the fix, on its first build as on any run.
        Returns the unique key's columns, a list. -#}
    {%- if config.get('incremental_strategy') is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set strategy = config.get('incremental_strategy') -%}
    {%- set unique_key = config.get('unique_key') -%}
    {%- set keys = [unique_key] if unique_key is string else (unique_key or []) | list -%}
    {%- set problem = none -%}
    {%- if strategy != 'merge' -%}
        {%- set problem = "incremental_strategy '" ~ strategy ~ "' is not one of exact_incremental's:"
            ~ " leave it out (days, buckets and batches replaced whole) or set 'merge' on a keys"
            ~ " model on Delta" -%}
    {%- elif kappa._contract_mode(model) != 'keys' -%}
        {%- set problem = "incremental_strategy 'merge' is for a keys model (partitioned by"
            ~ " kappa.key_bucket() of its recompute_key): leave it out of this one" -%}
    {%- elif kappa._table_format() == 'parquet' -%}
        {%- set problem = "incremental_strategy 'merge' needs file_format 'delta' or 'iceberg' (a"
            ~ " parquet table cannot merge): leave it out on parquet, or build the model on Delta or Iceberg" -%}
    {%- elif keys | length == 0 -%}
        {%- set problem = "incremental_strategy 'merge' needs unique_key, the column(s) that"
            ~ " identify a row: set unique_key='" ~ config.get('recompute_key') ~ "' if it has"
            ~ " one row per " ~ config.get('recompute_key') -%}
    {%- endif -%}
    {%- if problem is not none -%}
        {%- do exceptions.raise_compiler_error("kappa: " ~ model.name ~ ": " ~ problem) -%}
    {%- endif -%}
    {{ return(keys) }}
{% endmacro %}
