{% macro _dynamic_partition_overwrite() %}
    {#- Sets the session's partition overwrite mode to dynamic, on the connection of the
        statements that follow: an `insert overwrite` then replaces the partitions it writes,
        not the whole table, without the profile having to say so. -#}
    {%- call statement('set_dynamic_overwrite') -%}
        set spark.sql.sources.partitionOverwriteMode = DYNAMIC
    {%- endcall -%}
{% endmacro %}
