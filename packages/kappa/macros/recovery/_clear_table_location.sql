{% macro _clear_table_location(schema_name, table_name, why="files without a table that a full refresh killed while it swapped the table in left") %}
    {#- Delete whatever files lie at the default location of the managed table
        `schema_name.table_name`, which must not exist, in Spark SQL alone (it has no statement
        that deletes a path, and Spark refuses to create a managed table on a non-empty
        location): an empty managed table, the carrier `<table>__kappa_clear`, is pointed at
        that location and dropped, and a managed table's DROP deletes its location. The carrier
        is a Hive text table, not a parquet one: Spark lists a parquet table's files when its
        location changes, and fails on a layout that is not one of its own partitions (an
        Iceberg table's `data/` and `metadata/`: CONFLICTING_DIRECTORY_STRUCTURES). The
        carrier's own (empty) directory goes the same way. A run killed in between leaves the
        carrier, which the next clear drops first (wherever it points, dropping it deletes
        only what is to be deleted). `why` says in the log whose files they are. -#}
    {%- set carrier = schema_name ~ '.' ~ table_name ~ '__kappa_clear' -%}
    {%- set location = [] -%}
    {%- for row in run_query('describe schema extended ' ~ schema_name) if row['info_name'] == 'Location' -%}
        {%- do location.append(row['info_value'].rstrip('/') ~ '/' ~ table_name) -%}
    {%- endfor -%}
    {%- set location = location[0] -%}
    {{ log("Cleared " ~ location ~ ": " ~ why ~ " (" ~ schema_name ~ "." ~ table_name ~ "); the model is rebuilt", info=true) }}
    {%- for statement_sql in [
        'drop table if exists ' ~ carrier,
        'create table ' ~ carrier ~ ' (kappa_cleared int) stored as textfile',
        "alter table " ~ carrier ~ " set location '" ~ location ~ "'",
        'drop table ' ~ carrier,
        'create table ' ~ carrier ~ ' (kappa_cleared int) stored as textfile',
        'drop table ' ~ carrier,
    ] -%}
        {%- call statement('clear_table_location') -%} {{ statement_sql }} {%- endcall -%}
    {%- endfor -%}
{% endmacro %}
