{% macro release_run_lock(holder=none) %}
    {#- On-run-end hook: release this run's run lock of each schema it took (see
        _acquire_run_lock). As an operation,
        release the lock of a run that crashed on a shared server without waiting for it to
        expire: dbt run-operation release_run_lock --args '{holder: <run id>}'. Renders no
        SQL. -#}
    {%- if execute and (holder is not none or flags.WHICH in ('run', 'build', 'seed', 'snapshot')) -%}
        {%- for schema_name in kappa._contract_schemas() -%}
            {%- call statement('release_run_lock') -%}
                alter table {{ kappa._run_lock_relation(schema_name) }}
                drop if exists partition (holder = '{{ holder or invocation_id }}')
            {%- endcall -%}
            {%- if holder is not none -%}
                {{ log("Released the run lock of " ~ schema_name ~ " held by run " ~ holder, info=true) }}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
