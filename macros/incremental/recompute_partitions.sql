{% macro recompute_partitions(existing_relation, partitions) %}
    {#- Replace the given partitions (days or key buckets, from recomputed_partitions) of a
        recomputing model, inside its materialization: the model's rows for those partitions are
        computed once and cached, the partitions that have rows are overwritten (dynamic
        partition overwrite), and those that came out empty are dropped, since an overwrite
        leaves a partition alone when it gets no rows. A crash part way is repaired by the next
        run: the ledger is not committed, so it recomputes the same partitions (and any newer
        ones). -#}
    {%- set partition_column = (config.get('partition_by') if config.get('partition_by') is string
        else config.get('partition_by')[0]) -%}
    {%- set recomputed = this.identifier ~ '__kappa_recomputed' -%}
    {%- call statement('cache_recomputed_partitions') -%}
        cache table {{ recomputed }} as
        select * from (
            {{ compiled_code }}
        ) as model_rows
        where {{ partition_column }} in (
            {%- for value in partitions %}{{ partition_literal(model, value) }}{{ ", " if not loop.last }}{% endfor -%}
        )
    {%- endcall -%}
    {%- call statement('set_dynamic_overwrite') -%}
        set spark.sql.sources.partitionOverwriteMode = DYNAMIC
    {%- endcall -%}
    {%- call statement('main') -%}
        {{ get_insert_overwrite_sql(recomputed, this, existing_relation) }}
    {%- endcall -%}
    {%- do fault_point('after_overwrite') -%}
    {%- set present_query -%}
        select distinct cast({{ partition_column }} as string) as partition_value from {{ recomputed }}
    {%- endset -%}
    {%- set present = run_query(present_query).columns[0].values() | list -%}
    {%- set emptied = [] -%}
    {%- for value in partitions if value not in present -%}
        {%- do emptied.append(value) -%}
    {%- endfor -%}
    {%- if emptied | length > 0 -%}
        {%- call statement('drop_emptied_partitions') -%}
            alter table {{ this }} drop if exists
            {% for value in emptied -%}
                partition ({{ partition_column }} = {{ partition_literal(model, value) }}){{ ", " if not loop.last }}
            {%- endfor %}
        {%- endcall -%}
    {%- endif -%}
    {%- call statement('uncache_recomputed_partitions') -%}
        uncache table if exists {{ recomputed }}
    {%- endcall -%}
    {%- call statement('drop_recomputed_partitions') -%}
        drop view if exists {{ recomputed }}
    {%- endcall -%}
{% endmacro %}
