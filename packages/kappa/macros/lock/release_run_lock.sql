{% macro release_run_lock(holder=none) %}
    {#- On-run-end hook: release this run's run lock (see _acquire_run_lock). As an operation,
        release the lock of a run that crashed on a shared server without waiting for it to
        expire: dbt run-operation release_run_lock --args '{holder: <run id>}'. Renders no
        SQL. -#}
    {%- if execute and (holder is not none or flags.WHICH in ('run', 'build', 'seed', 'snapshot')) -%}
        {%- call statement('release_run_lock') -%}
            alter table {{ kappa._run_lock_relation(target.schema) }}
            drop if exists partition (holder = '{{ holder or invocation_id }}')
        {%- endcall -%}
        {%- if holder is not none -%}
            {{ log("Released the run lock of " ~ target.schema ~ " held by run " ~ holder, info=true) }}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
