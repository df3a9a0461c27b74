{% macro _run_lock_refusal(holder) %}
    {#- Stop this run, before it changes anything, because `holder` (a row of the run lock)
        builds the same schema. -#}
    {{ exceptions.raise_compiler_error(
        "target '" ~ target.name ~ "' (schema " ~ target.schema ~ ") is being built by another run"
        ~ " (" ~ holder['command'] ~ ", run " ~ holder['holder'] ~ ", since " ~ holder['acquired_at']
        ~ " UTC): this run changed nothing. Wait for it to finish. If it crashed, its lock expires "
        ~ var('kappa_run_lock_timeout_minutes', 360) ~ " minutes after it was taken, or release it now:"
        ~ " dbt run-operation kappa.release_run_lock --args '{holder: " ~ holder['holder'] ~ "}'"
        ~ " --target " ~ target.name
    ) }}
{% endmacro %}
