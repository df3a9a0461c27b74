{% macro on_run_start() %}
    {#- The contract's bookkeeping before a run, as one on-run-start hook
        (`on-run-start: ["{{ kappa.on_run_start() }}"]` in dbt_project.yml): the target schema
        exists; a `run`, `build`, `seed` or `snapshot` takes the schema's run lock (or stops
        with one line naming the run that holds it) and drops what a killed full refresh left
        behind; the batch ledger exists and is read once, before dbt's threads start. Renders
        no SQL. -#}
    {%- if execute -%}
        {%- do run_query('create schema if not exists ' ~ target.schema) -%}
        {%- do kappa._acquire_run_lock() -%}
        {%- do kappa._drop_build_leftovers() -%}
        {%- do kappa._ledger_ranges(target.schema) -%}
    {%- endif -%}
{% endmacro %}
