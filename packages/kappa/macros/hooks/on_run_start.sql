{% macro on_run_start() %}
    {#- The contract's bookkeeping before a run, as one on-run-start hook
        (`on-run-start: ["{{ kappa.on_run_start() }}"]` in dbt_project.yml): the session's
        settings checked (_check_session_settings); then, for each schema
        the contract's models are built in (_contract_schemas: the target's, unless the
        project's generate_schema_name puts them elsewhere): the schema exists; a `run`,
        `build`, `seed` or `snapshot` takes its run lock (or stops with one line naming the run
        that holds it) and drops what a killed full refresh left behind; its batch ledger
        exists and is read once, before dbt's threads start. Renders no SQL. -#}
    {%- if execute -%}
        {%- do kappa._check_session_settings() -%}
        {%- set schemas = kappa._contract_schemas() -%}
        {%- for schema_name in schemas -%}
            {%- do run_query('create schema if not exists ' ~ schema_name) -%}
        {%- endfor -%}
        {%- do kappa._acquire_run_lock() -%}
        {%- for schema_name in schemas -%}
            {%- do kappa._drop_build_leftovers(schema_name) -%}
            {%- do kappa._ledger_ranges(schema_name) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
