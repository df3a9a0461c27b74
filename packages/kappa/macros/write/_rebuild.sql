{% macro _rebuild(existing_relation, last_batch_id) %}
    {#- A full refresh (or a first build): the model's whole table from every batch, written so
        that a run killed mid-write leaves the old table as it was.

        - Delta and Iceberg: `create or replace table`, one atomic commit, and a new version (a
          snapshot) of the table, whose history stays readable (time travel). A table of
          another format (built before the switch) is dropped first: each format replaces only
          its own tables.
        - Leaving Iceberg for another format: an Iceberg table is an external table of the
          metastore, whose DROP keeps its files (Iceberg's `purge` too keeps its directories);
          they lie where the new table goes, and Spark refuses to create a managed table on a
          non-empty location (LOCATION_ALREADY_EXISTS), so they are cleared once the table is
          dropped (_clear_table_location). A kill in between leaves no table, which the next
          run builds. A session with Iceberg's catalog may still hold the Iceberg table in its
          cache (the drop went around that catalog): the new table is refreshed, so that the
          session reads it.
        - Parquet: built under a name of its own (`<model>__kappa_build_<run>`) and renamed into
          place when complete: a kill mid-write leaves the old table and its ledger (and a
          table that _drop_build_leftovers drops), never files without a table, which would
          block the next create.
        A days or keys model's partition column is checked first (_check_partition_column),
        and its rows as they are written (_checked_rows). -#}
    {%- if kappa._contract_mode(model) != 'batches' -%}
        {%- do kappa._check_partition_column(kappa._model_columns()) -%}
    {%- endif -%}
    {%- set leaving_iceberg = existing_relation is not none
        and kappa._relation_format(existing_relation) == 'iceberg'
        and kappa._table_format() != 'iceberg' -%}
    {%- if kappa._table_format() != 'parquet' -%}
        {%- if existing_relation is not none
            and kappa._relation_format(existing_relation) != kappa._table_format() -%}
            {% do kappa._drop_replaced(existing_relation, leaving_iceberg) %}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ create_table_as(false, this, kappa._checked_rows(compiled_code)) }}
        {%- endcall -%}
    {%- else -%}
        {%- set build_relation = this.incorporate(path={
            'identifier': this.identifier ~ '__kappa_build_' ~ invocation_id.replace('-', '')[:12]
        }, type='table') -%}
        {%- call statement('main') -%}
            {{ create_table_as(false, build_relation, kappa._checked_rows(compiled_code)) }}
        {%- endcall -%}
        {%- if existing_relation is not none and existing_relation.is_delta -%}
            {#- a Delta table, built before a switch back to parquet: Spark's DROP TABLE looks
                up the table's provider, which a session without Delta's jars lacks, unless it
                runs as the v1 command, which drops the table and its files by name. (Left on
                for the rest of the session, as models run in parallel threads: for the session
                catalog's parquet tables the v1 commands do what the v2 ones do.) -#}
            {%- call statement('v1_commands') -%} set spark.sql.legacy.useV1Command = true {%- endcall -%}
        {%- endif -%}
        {%- if existing_relation is not none -%}
            {% do kappa._drop_replaced(existing_relation, leaving_iceberg) %}
        {%- endif -%}
        {% do adapter.rename_relation(build_relation, this.incorporate(type='table')) %}
    {%- endif -%}
    {%- if leaving_iceberg -%}
        {%- call statement('refresh_after_iceberg') -%} refresh table {{ this }} {%- endcall -%}
    {%- endif -%}
    {{ log(model.name ~ ": rebuilt from ingestion batches 1.." ~ last_batch_id) }}
{% endmacro %}


{% macro _drop_replaced(existing_relation, leaving_iceberg) %}
    {#- Drop the table a rebuild replaces; when it is an Iceberg table and the model is now of
        another format (`leaving_iceberg`), clear the files its drop keeps where the new table
        goes (_rebuild says why). -#}
    {% do adapter.drop_relation(existing_relation) %}
    {%- if leaving_iceberg -%}
        {% do kappa._clear_table_location(existing_relation.schema, existing_relation.identifier, "the files of the Iceberg table it was") %}
    {%- endif -%}
{% endmacro %}
