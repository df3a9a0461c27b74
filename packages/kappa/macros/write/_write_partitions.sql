{% macro _write_partitions(existing_relation, partitions, table_columns) %}
    {#- Replace the given partitions (days or key buckets, from recomputed_partitions) of a
        recomputing model, inside its materialization, computing the model's rows for them once,
        straight into the table. A partition that comes out empty (two sessions merged into the
        day before, a bucket whose keys were all deleted) ends up with no rows.

        - Delta and Iceberg: one `insert into ... replace where <partition> in (...)`, a single atomic
          commit: readers see the table before or after, never in between, and a crash leaves
          the table as it was. A keys model with incremental_strategy 'merge' merges its
          buckets' rows on its unique_key instead, also one commit (_merge_partitions).
        - Parquet: the partitions are registered (if a killed run left their files unlisted)
          and dropped, then the rows are written with a dynamic partition overwrite (a
          partition that gets no rows stays dropped). Not `insert into`: an append stages in
          the table's shared `_temporary` directory, where the tasks' output of a write killed
          before its job committed stays, and the next append merges it into the table, its
          rows a second time (SPARK-29037; found by `kappa-shop chaos` killing inside writes);
          an overwrite stages in a directory of its own job. A crash between the drop and the insert (fault point `after_drop`) leaves
          those partitions missing until the next run, which repairs it: the ledger is not
          committed, so it recomputes the same partitions (and any that newer batches reach).
          Readers may see a partition missing or half written meanwhile (docs/guarantees.md).

        Returns the predicate on the partition column that selects the partitions written. -#}
    {%- set partition_column = kappa._partition_column(model) -%}
    {%- set values -%}
        {%- for value in partitions %}{{ kappa._partition_literal(model, value) }}{{ ", " if not loop.last }}{% endfor -%}
    {%- endset -%}
    {%- set columns = table_columns | map(attribute='quoted') | join(', ') -%}
    {#- the model's rows of those partitions, in the table's column order -#}
    {%- set partition_rows -%}
        select {{ columns }}
        from (
            {{ kappa._checked_rows(compiled_code) }}
        ) as model_rows
        where {{ partition_column }} in ({{ values }})
    {%- endset -%}
    {%- set unique_key = kappa._key_merge() -%}
    {%- if unique_key is not none -%}
        {%- do kappa._merge_partitions(partition_column, values, partition_rows, table_columns, unique_key) -%}
    {%- elif kappa._table_format() != 'parquet' -%}
        {%- call statement('main') -%}
            insert into {{ this }} replace where {{ partition_column }} in ({{ values }})
            {{ partition_rows }}
        {%- endcall -%}
    {%- else -%}
        {#- a partition's directory can hold files the metastore does not list: a run killed
            after its insert moved them in and before it registered the partition. Added
            first (its directory as it is), the drop then deletes them with the rest; without
            it the drop would leave them, and the insert below would add the rows again. -#}
        {%- call statement('register_recomputed_partitions') -%}
            alter table {{ this }} add if not exists
            {% for value in partitions -%}
                partition ({{ partition_column }} = {{ kappa._partition_literal(model, value) }}){{ " " if not loop.last }}
            {%- endfor %}
        {%- endcall -%}
        {%- call statement('drop_recomputed_partitions') -%}
            alter table {{ this }} drop if exists
            {% for value in partitions -%}
                partition ({{ partition_column }} = {{ kappa._partition_literal(model, value) }}){{ ", " if not loop.last }}
            {%- endfor %}
        {%- endcall -%}
        {%- do kappa._fault_point('after_drop') -%}
        {%- do kappa._dynamic_partition_overwrite() -%}
        {%- call statement('main') -%}
            insert overwrite table {{ this }} partition ({{ partition_column }})
            {{ partition_rows }}
        {%- endcall -%}
    {%- endif -%}
    {{ return(partition_column ~ ' in (' ~ values ~ ')') }}
{% endmacro %}
