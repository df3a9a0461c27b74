{% macro hold_run_lock(holder) %}
    {#- Record `holder` as a run that holds the target schema's run lock now, in this Spark
        application (as a concurrent run of the same server would). -#}
    {%- do run_query('create schema if not exists ' ~ target.schema) -%}
    {%- set lock = kappa._run_lock_relation(target.schema) -%}
    {%- set application = run_query('set spark.app.id').rows[0][1] -%}
    {%- do run_query("insert overwrite table " ~ lock ~ " partition (holder = '" ~ holder ~ "')"
        ~ " select 'run', '" ~ target.name ~ "', '" ~ application ~ "', current_timestamp()") -%}
{% endmacro %}
