{% macro _commit_consumed_batches() %}
    {#- On-run-end hook: commit to each schema's ledger, in one statement, the incremental
        ranges that this invocation's models recorded (_record_consumed_batches), after every
        model's table is written and while the run still holds the schema's run lock. The
        write replaces the partitions (model, first batch) it writes, so a range recorded again
        after a crash replaces itself. Both partition columns are dynamic: Spark lists the
        ledger's partitions once per run, where a commit per model listed that model's
        partitions once per model. A run that dies before this point commits none of its
        incremental ranges (the next run redoes them); a full refresh was committed when it
        was written. Renders no SQL. -#}
    {%- if execute -%}
        {%- set pending = kappa._run_state()['pending_ledger_rows'] -%}
        {%- for schema_name in pending.keys() | list | sort -%}
            {%- set rows = pending[schema_name] -%}
            {%- if rows | length > 0 -%}
                {%- do kappa._write_ledger_rows('commit_consumed_batches', schema_name, rows) -%}
                {{ log("Committed " ~ rows | length ~ " model run(s) to the ledger of " ~ schema_name) }}
            {%- endif -%}
        {%- endfor -%}
        {%- do pending.clear() -%}
    {%- endif -%}
{% endmacro %}
