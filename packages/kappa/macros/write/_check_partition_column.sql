{% macro _check_partition_column(model_columns) %}
    {#- Stop a model whose partition column does not fit its mode, before it writes: a days
        model's must be a date (the UTC day of its event_time: a timestamp or a string would
        name partitions the day literals of a run never match, and the rows would be appended
        again instead of replaced), and a keys model's rows must carry their recompute_key and
        an integer bucket column (whose values _checked_rows then checks row by row).
        `model_columns` maps the model's column names (lower case) to their types, as Spark's
        `describe query` gives them. -#}
    {%- set mode = kappa._contract_mode(model) -%}
    {%- set column = kappa._partition_column(model) | lower -%}
    {%- set type = model_columns.get(column) -%}
    {%- if mode == 'days' and type != 'date' -%}
        {% do exceptions.raise_compiler_error(
            model.name ~ ": a model partitioned by day needs its partition column " ~ column
            ~ " to be the UTC day of its event_time, a date: "
            ~ ("it is " ~ type if type else "the model has no such column")
            ~ ". Select it as to_date(" ~ config.get('event_time') ~ ") as " ~ column
        ) %}
    {%- endif -%}
    {%- if mode == 'keys' -%}
        {%- set key = config.get('recompute_key') -%}
        {%- if key | lower not in model_columns -%}
            {% do exceptions.raise_compiler_error(
                model.name ~ ": a model partitioned by key bucket keeps its recompute_key " ~ key
                ~ " as a column, and the model has no such column: select it"
            ) %}
        {%- endif -%}
        {%- if type not in ['tinyint', 'smallint', 'int', 'bigint'] -%}
            {% do exceptions.raise_compiler_error(
                model.name ~ ": a model partitioned by key bucket needs its partition column " ~ column
                ~ " to be kappa.key_bucket(" ~ key ~ "), an integer: "
                ~ ("it is " ~ type if type else "the model has no such column")
                ~ ". Select it as {{ kappa.key_bucket('" ~ key ~ "') }} as " ~ column
            ) %}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
