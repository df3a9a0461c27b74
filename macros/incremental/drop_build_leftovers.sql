{% macro drop_build_leftovers() %}
    {#- On-run-start hook, after the run lock is taken: drop the tables a killed full refresh
        left behind. exact_incremental rebuilds a table under a name of its own
        (`<model>__kappa_build_<run>`) and renames it into place only when it is complete, so
        that a run killed in the middle of the write leaves the old table (and its ledger) as
        they were, never a half-written table or files without a table. Renders no SQL. -#}
    {%- if execute and flags.WHICH in ('run', 'build') -%}
        {%- set leftovers = run_query(
            "show tables in " ~ target.schema ~ " like '*__kappa_build_*'"
        ) -%}
        {%- for row in leftovers if not row['isTemporary'] -%}
            {{ log("Dropped " ~ target.schema ~ "." ~ row['tableName'] ~ ", left by a full refresh that was killed", info=true) }}
            {%- call statement('drop_build_leftover') -%}
                drop table if exists {{ target.schema }}.{{ row['tableName'] }}
            {%- endcall -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
