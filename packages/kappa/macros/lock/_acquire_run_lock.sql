{% macro _acquire_run_lock() %}
    {#- On-run-start hook: one build of a schema at a time. Before a `dbt run`, `build`, `seed`
        or `snapshot` changes anything, take the run lock of every schema the contract's
        models are built in (_contract_schemas), in order, or stop with one message naming the
        run that holds one (releasing those it took).

        A run that crashed cannot keep the lock forever: a holder of another Spark application
        is gone (on an embedded target, `session`, another process, which Derby would not admit
        beside this one; on a shared server, `thrift`, an earlier server process) and its lock
        is released; a holder older than var `kappa_run_lock_timeout_minutes` (360) has
        expired; and `dbt run-operation kappa.release_run_lock --args '{holder: <id>}'`
        releases one at once. Two runs that take the
        lock at the same moment both write their row, then the later one (by time, then id)
        backs off. Renders no SQL. -#}
    {%- if execute and flags.WHICH in ('run', 'build', 'seed', 'snapshot') -%}
        {%- set taken = [] -%}
        {%- for schema_name in kappa._contract_schemas() -%}
            {%- do kappa._take_run_lock(schema_name, taken) -%}
            {%- do taken.append(schema_name) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
