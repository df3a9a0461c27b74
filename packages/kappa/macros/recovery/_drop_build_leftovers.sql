{% macro _drop_build_leftovers(schema_name) %}
    {#- On-run-start hook, after the run lock is taken: drop the tables a killed full refresh
        left behind in `schema_name`. exact_incremental rebuilds a table under a name of its own
        (`<model>__kappa_build_<run>`) and renames it into place only when it is complete, so
        that a run killed in the middle of the write leaves the old table (and its ledger) as
        they were, never a half-written table or files without a table. Renders no SQL.

        A kill inside the swap itself can leave files at the model's location without a table:
        the metastore's DROP TABLE commits before it deletes the files, and its RENAME moves the
        directory before it commits (Hive's HMSHandler and HiveAlterHandler). Either way the
        build table is still in the metastore and the model's table is not, and every later
        create or rename of the model would fail with LOCATION_ALREADY_EXISTS. So, for a
        leftover whose model has no table, the model's location is cleared first (the model is
        then rebuilt by this run, having no table), and only then is the leftover dropped: a
        kill in between leaves the same evidence for the next run. -#}
    {%- if execute and flags.WHICH in ('run', 'build') -%}
        {%- set leftovers = run_query(
            "show tables in " ~ schema_name ~ " like '*__kappa_build_*'"
        ) -%}
        {%- for row in leftovers if not row['isTemporary'] -%}
            {%- set model_table = row['tableName'].split('__kappa_build_')[0] -%}
            {%- set model_tables = run_query(
                "show tables in " ~ schema_name ~ " like '" ~ model_table ~ "'"
            ) -%}
            {%- if model_tables | length == 0 -%}
                {%- do kappa._clear_table_location(schema_name, model_table) -%}
            {%- endif -%}
            {{ log("Dropped " ~ schema_name ~ "." ~ row['tableName'] ~ ", left by a full refresh that was killed", info=true) }}
            {%- call statement('drop_build_leftover') -%}
                drop table if exists {{ schema_name }}.{{ row['tableName'] }}
            {%- endcall -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}

