{% macro _checked_rows(sql) %}
    {#- The rows of `sql` (the model's compiled SQL) as a days or keys model writes them, each
        checked in the same pass (Spark's assert_true: the write fails, nothing of it
        committed, on the first row that is not right):
        - days: the day column is not null. A day is recomputed when new input has event
          times in it; input without an event time is read by a full refresh only, so a row
          of no day would be in a full refresh and never in an incremental run.
        - keys: the bucket column is kappa.key_bucket() of the recompute_key. A row in
          another bucket than its key's would never be recomputed with its key.
        Batches mode: `sql` as it is. -#}
    {%- set mode = kappa._contract_mode(model) -%}
    {%- if mode == 'batches' -%}
        {{ return(sql) }}
    {%- endif -%}
    {%- set column = kappa._partition_column(model) -%}
    {%- if mode == 'days' -%}
        {%- set condition = column ~ " is not null" -%}
        {%- set message = model.name ~ ": a row has no " ~ column ~ " (its input had no "
            ~ config.get('event_time') ~ "): a row of no day is never recomputed. Leave out or "
            ~ "quarantine input without an event time before this model" -%}
    {%- else -%}
        {%- set key = config.get('recompute_key') -%}
        {%- set condition = column ~ " <=> " ~ kappa.key_bucket(key) -%}
        {%- set message = model.name ~ ": a row has " ~ column ~ " other than the bucket of its "
            ~ "recompute_key " ~ key ~ ": select {{ kappa.key_bucket(\"" ~ key ~ "\") }} as " ~ column -%}
    {%- endif -%}
    {%- set checked -%}
        select * from (
            {{ sql }}
        ) as model_rows
        where assert_true({{ condition }}, '{{ message | replace("'", "") }}') is null
    {%- endset -%}
    {{ return(checked) }}
{% endmacro %}
