{% macro recompute_partitions(existing_relation, partitions) %}
    {#- Replace the given partitions (days or key buckets, from recomputed_partitions) of a
        recomputing model, inside its materialization: the partitions are dropped, then the
        model's rows for them are computed and appended in one pass (`insert into`, dynamic
        partitions). A partition that comes out empty (two sessions merged into the day before,
        a bucket whose keys were all deleted) stays dropped.

        Why not overwrite: an overwrite leaves a partition alone when it gets no rows, so the
        rows would have to be computed (and cached) first to find the empty ones; computing them
        once, straight into the table, costs what a full rebuild of those partitions costs.

        A crash between the drop and the insert leaves those partitions missing until the next
        run, which repairs it: the ledger is not committed, so it recomputes the same partitions
        (and any that newer batches reach). Readers of parquet tables may see a partition missing
        or half written while a run rewrites it (docs/guarantees.md). -#}
    {%- set partition_column = (config.get('partition_by') if config.get('partition_by') is string
        else config.get('partition_by')[0]) -%}
    {%- call statement('drop_recomputed_partitions') -%}
        alter table {{ this }} drop if exists
        {% for value in partitions -%}
            partition ({{ partition_column }} = {{ partition_literal(model, value) }}){{ ", " if not loop.last }}
        {%- endfor %}
    {%- endcall -%}
    {%- do fault_point('after_drop') -%}
    {%- set columns = adapter.get_columns_in_relation(existing_relation) | map(attribute='quoted') | join(', ') -%}
    {%- call statement('main') -%}
        insert into {{ this }} partition ({{ partition_column }})
        select {{ columns }}
        from (
            {{ compiled_code }}
        ) as model_rows
        where {{ partition_column }} in (
            {%- for value in partitions %}{{ partition_literal(model, value) }}{{ ", " if not loop.last }}{% endfor -%}
        )
    {%- endcall -%}
{% endmacro %}
