{% macro _checked_rows(sql) %}
    {#- The rows of `sql` (the model's compiled SQL) as a keys model writes them: each row's
        bucket column checked to be kappa.key_bucket() of its recompute_key, in the same pass
        (Spark's assert_true: the write fails, nothing of it committed, on the first row
        that is not). A row in another bucket than its key's would never be recomputed with
        its key, and the table would drift from a full refresh. Other modes: `sql` as it is. -#}
    {%- if kappa._contract_mode(model) != 'keys' -%}
        {{ return(sql) }}
    {%- endif -%}
    {%- set partition_by = config.get('partition_by') -%}
    {%- set column = partition_by if partition_by is string else partition_by[0] -%}
    {%- set key = config.get('recompute_key') -%}
    {%- set message = model.name ~ ": a row has " ~ column ~ " other than the bucket of its "
        ~ "recompute_key " ~ key ~ ": select {{ kappa.key_bucket(\"" ~ key ~ "\") }} as " ~ column -%}
    {%- set checked -%}
        select * from (
            {{ sql }}
        ) as model_rows
        where assert_true({{ column }} <=> {{ kappa.key_bucket(key) }}, '{{ message | replace("'", "") }}') is null
    {%- endset -%}
    {{ return(checked) }}
{% endmacro %}
