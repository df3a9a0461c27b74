{% macro _take_run_lock(schema_name, taken) %}
    {#- Take the run lock of `schema_name` for this run (see _acquire_run_lock), or stop with
        one message naming the run that holds it, releasing first the locks of `taken` (the
        schemas whose locks this run took before). -#}
    {%- if execute -%}
        {%- set lock = kappa._run_lock_relation(schema_name) -%}
        {%- set stale = [] -%}
        {%- set live = kappa._run_lock_holders(lock, stale) -%}
        {%- if live | length > 0 -%}
            {{ kappa._run_lock_refusal(live[0], schema_name, taken) }}
        {%- endif -%}
        {%- for row in stale -%}
            {{ log("Released the run lock of " ~ schema_name ~ " left by run " ~ row['holder']
                ~ " (" ~ row['command'] ~ ", since " ~ row['acquired_at'] ~ "): "
                ~ ("it expired" if row['age_minutes'] >= var('kappa_run_lock_timeout_minutes', 360)
                    else "its Spark process is gone"),
                info=true) }}
            {%- call statement('release_stale_run_lock') -%}
                alter table {{ lock }} drop if exists partition (holder = '{{ row['holder'] }}')
            {%- endcall -%}
        {%- endfor -%}
        {%- set application = run_query('set spark.app.id').rows[0][1] -%}
        {#- the holder a dynamic partition: the write stages in a directory of its own job, not
            the table's shared `_temporary`, which two runs taking the lock at once would share
            and a killed run's unfinished write would leave to the next (SPARK-29037) -#}
        {%- do kappa._dynamic_partition_overwrite() -%}
        {%- call statement('take_run_lock') -%}
            insert overwrite table {{ lock }} partition (holder)
            select
                '{{ flags.WHICH }}' as command,
                '{{ target.name }}' as target_name,
                '{{ application }}' as spark_application_id,
                current_timestamp() as acquired_at,
                '{{ invocation_id }}' as holder
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
                {{ kappa._run_lock_refusal(rival, schema_name, taken) }}
            {%- endfor -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
