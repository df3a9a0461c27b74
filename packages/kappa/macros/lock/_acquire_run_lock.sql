{% macro _acquire_run_lock() %}
    {#- On-run-start hook: one build of a schema at a time. Before a `dbt run`, `build`, `seed`
        or `snapshot` changes anything, take the schema's run lock, or stop with one message
        naming the run that holds it.

        A run that crashed cannot keep the lock forever: a holder of another Spark application
        is gone (on an embedded target, `session`, another process, which Derby would not admit
        beside this one; on a shared server, `thrift`, an earlier server process) and its lock
        is released; a holder older than var `kappa_run_lock_timeout_minutes` (360) has
        expired; and `dbt run-operation kappa.release_run_lock --args '{holder: <id>}'`
        releases one at once. Two runs that take the
        lock at the same moment both write their row, then the later one (by time, then id)
        backs off. Renders no SQL. -#}
    {%- if execute and flags.WHICH in ('run', 'build', 'seed', 'snapshot') -%}
        {%- set lock = kappa._run_lock_relation(target.schema) -%}
        {%- set stale = [] -%}
        {%- set live = kappa._run_lock_holders(lock, stale) -%}
        {%- if live | length > 0 -%}
            {{ kappa._run_lock_refusal(live[0]) }}
        {%- endif -%}
        {%- for row in stale -%}
            {{ log("Released the run lock of " ~ target.schema ~ " left by run " ~ row['holder']
                ~ " (" ~ row['command'] ~ ", since " ~ row['acquired_at'] ~ "): "
                ~ ("it expired" if row['age_minutes'] >= var('kappa_run_lock_timeout_minutes', 360)
                    else "its Spark process is gone"),
                info=true) }}
            {%- call statement('release_stale_run_lock') -%}
                alter table {{ lock }} drop if exists partition (holder = '{{ row['holder'] }}')
            {%- endcall -%}
        {%- endfor -%}
        {%- set application = run_query('set spark.app.id').rows[0][1] -%}
        {%- call statement('take_run_lock') -%}
            insert overwrite table {{ lock }} partition (holder = '{{ invocation_id }}')
            select
                '{{ flags.WHICH }}' as command,
                '{{ target.name }}' as target_name,
                '{{ application }}' as spark_application_id,
                current_timestamp() as acquired_at
        {%- endcall -%}
        {#- a run that wrote its row at the same moment as this one: the earlier one keeps it -#}
        {%- set rivals = kappa._run_lock_holders(lock, []) -%}
        {%- if rivals | length > 0 -%}
            {%- set mine = run_query("select acquired_at from " ~ lock ~ " where holder = '"
                ~ invocation_id ~ "'").rows[0][0] -%}
            {%- for rival in rivals if (rival['acquired_at'], rival['holder']) < (mine, invocation_id) -%}
                {%- call statement('back_off_run_lock') -%}
                    alter table {{ lock }} drop if exists partition (holder = '{{ invocation_id }}')
                {%- endcall -%}
                {{ kappa._run_lock_refusal(rival) }}
            {%- endfor -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
