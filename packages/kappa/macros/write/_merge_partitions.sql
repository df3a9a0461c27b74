{% macro _merge_partitions(partition_column, values, partition_rows, table_columns, unique_key) %}
    {#- A keys model's recomputed buckets merged into its Delta table on its unique_key, in one
        atomic commit: a row whose columns changed is updated, a new row inserted, and a row of
        those buckets that the recompute no longer gives (a key gone, a history row replaced)
        deleted; the rest of the buckets' rows are left alone, so with deletion vectors
        (`delta.enableDeletionVectors`) only the changed rows are written, where `replace where`
        rewrites every file of the buckets. The result is the same table as a replace: the
        buckets hold exactly the recompute's rows (the unique key identifies one row of each,
        and all of one key's rows are in its key's bucket). -#}
    {%- set matched -%}
        {%- for column in unique_key %}target.{{ adapter.quote(column) }} <=> source.{{ adapter.quote(column) }} and {% endfor -%}
        target.{{ partition_column }} in ({{ values }})
    {%- endset -%}
    {%- set unchanged -%}
        {%- for column in table_columns %}target.{{ column.quoted }} <=> source.{{ column.quoted }}{{ " and " if not loop.last }}{% endfor -%}
    {%- endset -%}
    {%- call statement('main') -%}
        merge into {{ this }} as target
        using (
            {{ partition_rows }}
        ) as source
        on {{ matched }}
        when matched and not ({{ unchanged }}) then update set *
        when not matched then insert *
        when not matched by source and target.{{ partition_column }} in ({{ values }}) then delete
    {%- endcall -%}
{% endmacro %}
