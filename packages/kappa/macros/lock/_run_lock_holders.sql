{% macro _run_lock_holders(lock, stale) %}
    {#- The other runs holding the run lock `lock` now, oldest first; those whose lock no
        longer counts (their Spark process or server is gone, or it expired) are appended to
        `stale`. -#}
    {%- set rows = run_query(
        "select holder, command, target_name, spark_application_id, acquired_at, "
        ~ "cast((unix_timestamp(current_timestamp()) - unix_timestamp(acquired_at)) / 60 as bigint)"
        ~ " as age_minutes from " ~ lock ~ " where holder != '" ~ invocation_id ~ "'"
        ~ " order by acquired_at, holder"
    ).rows -%}
    {%- set application = run_query('set spark.app.id').rows[0][1] -%}
    {%- set live = [] -%}
    {%- for row in rows -%}
        {#- a holder of another Spark application is gone: on a server (thrift), it ran on a
            server that has restarted since; embedded (session), in another process, which has
            ended (Derby admits one Spark process per metastore). A holder of this application
            (another dbt invocation of this process, or a client of this server) is live until
            it expires. -#}
        {%- if row['spark_application_id'] != application
            or row['age_minutes'] >= var('kappa_run_lock_timeout_minutes', 360) -%}
            {%- do stale.append(row) -%}
        {%- else -%}
            {%- do live.append(row) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(live) }}
{% endmacro %}
