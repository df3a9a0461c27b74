{% macro _run_lock_refusal(holder, schema_name, taken) %}
    {#- Stop this run, before it changes anything, because `holder` (a row of the run lock of
        `schema_name`) builds the same schema; the locks this run took of the schemas `taken`
        are released first. -#}
    {%- for other in taken -%}
        {%- call statement('release_taken_run_lock') -%}
            alter table {{ kappa._run_lock_relation(other) }} drop if exists partition (holder = '{{ invocation_id }}')
        {%- endcall -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error(
        "target '" ~ target.name ~ "' (schema " ~ schema_name ~ ") is being built by another run"
        ~ " (" ~ holder['command'] ~ ", run " ~ holder['holder'] ~ ", since " ~ holder['acquired_at']
        ~ " UTC): this run changed nothing. Wait for it to finish. If it crashed, its lock expires "
        ~ var('kappa_run_lock_timeout_minutes', 360) ~ " minutes after it was taken, or release it now:"
        ~ " dbt run-operation kappa.release_run_lock --args '{holder: " ~ holder['holder'] ~ "}'"
        ~ " --target " ~ target.name
    ) }}
{% endmacro %}
