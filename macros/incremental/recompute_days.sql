{% macro recompute_days(existing_relation, days) %}
    {#- Replace the given days of a day-recomputing model (inside its materialization): the
        model's rows for those days are computed once and cached, the days that have rows are
        overwritten (dynamic partition overwrite), and the days that came out empty are dropped,
        since an overwrite leaves a partition alone when it gets no rows. A crash part way is
        repaired by the next run: the ledger is not committed, so it recomputes the same days
        (and any newer ones). -#}
    {%- set day_column = (config.get('partition_by') if config.get('partition_by') is string
        else config.get('partition_by')[0]) -%}
    {%- set recomputed = this.identifier ~ '__kappa_recomputed' -%}
    {%- call statement('cache_recomputed_days') -%}
        cache table {{ recomputed }} as
        select * from (
            {{ compiled_code }}
        ) as model_rows
        where {{ day_column }} in ({% for day in days %}date '{{ day }}'{{ ", " if not loop.last }}{% endfor %})
    {%- endcall -%}
    {%- call statement('set_dynamic_overwrite') -%}
        set spark.sql.sources.partitionOverwriteMode = DYNAMIC
    {%- endcall -%}
    {%- call statement('main') -%}
        {{ get_insert_overwrite_sql(recomputed, this, existing_relation) }}
    {%- endcall -%}
    {%- set present_query -%}
        select distinct cast({{ day_column }} as string) as day from {{ recomputed }}
    {%- endset -%}
    {%- set present = run_query(present_query).columns[0].values() | list -%}
    {%- set emptied = [] -%}
    {%- for day in days if day not in present -%}
        {%- do emptied.append(day) -%}
    {%- endfor -%}
    {%- if emptied | length > 0 -%}
        {%- call statement('drop_emptied_days') -%}
            alter table {{ this }} drop if exists
            {% for day in emptied %}partition ({{ day_column }} = date '{{ day }}'){{ ", " if not loop.last }}{% endfor %}
        {%- endcall -%}
    {%- endif -%}
    {%- call statement('uncache_recomputed_days') -%}
        uncache table if exists {{ recomputed }}
    {%- endcall -%}
    {%- call statement('drop_recomputed_days') -%}
        drop view if exists {{ recomputed }}
    {%- endcall -%}
{% endmacro %}
