{% macro hold_run_lock(holder, schema_name=none) %}
    {#- Record `holder` as a run that holds the run lock of `schema_name` (the target's when
        none) now, in this Spark application (as a concurrent run of the same server would). -#}
    {%- set schema_name = schema_name or target.schema -%}
    {%- do run_query('create schema if not exists ' ~ schema_name) -%}
    {%- set lock = kappa._run_lock_relation(schema_name) -%}
    {%- set application = run_query('set spark.app.id').rows[0][1] -%}
    {%- do run_query("insert overwrite table " ~ lock ~ " partition (holder = '" ~ holder ~ "')"
        ~ " select 'run', '" ~ target.name ~ "', '" ~ application ~ "', current_timestamp()") -%}
{% endmacro %}
