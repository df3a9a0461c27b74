{% materialization exact_incremental, adapter='spark' %}
    {#- The incremental contract: a model's table always equals what a full refresh over the
        same log would build.

        - New input is found by ingestion batch (in_new_batches), never by time; which batches
          a model has consumed is committed to a ledger after its table is written.
        - The model is partitioned by `_ingestion_batch_id` (first in `partition_by`): every
          row it writes for a run belongs to the new batches, and the run replaces exactly
          those partitions (insert overwrite), so a rerun of the same batches rewrites them
          instead of appending twice.
        - A gap in the log's receipts or in the ledger stops the run with an error.
        - `--full-refresh` (or a first build) rebuilds the table from every batch. -#}
    {%- set partition_by = config.get('partition_by') -%}
    {%- set partition_columns = [partition_by] if partition_by is string else (partition_by or []) -%}
    {%- if partition_columns | length == 0 or partition_columns[0] != '_ingestion_batch_id' -%}
        {% do exceptions.raise_compiler_error(
            model.name ~ ": an exact_incremental model must be partitioned by _ingestion_batch_id"
            ~ " first (config partition_by=['_ingestion_batch_id', ...]); got " ~ partition_by
        ) %}
    {%- endif -%}

    {%- set existing_relation = load_relation(this) -%}
    {%- set full_refresh = existing_relation is none or should_full_refresh() -%}
    {%- set first_batch_id = 1 if full_refresh else consumed_through(this) + 1 -%}
    {%- set last_batch_id = available_through(model) -%}
    {%- if not full_refresh and first_batch_id > last_batch_id + 1 -%}
        {% do exceptions.raise_compiler_error(
            this ~ " has consumed through ingestion batch " ~ (first_batch_id - 1)
            ~ " but its inputs hold only " ~ last_batch_id ~ ": the log or an upstream model was "
            ~ "rebuilt. Rebuild this model too: dbt build --full-refresh --select " ~ model.name ~ "+"
        ) %}
    {%- endif -%}

    {{ run_hooks(pre_hooks) }}

    {%- if full_refresh -%}
        {%- if existing_relation is not none -%}
            {% do adapter.drop_relation(existing_relation) %}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ create_table_as(false, this, compiled_code) }}
        {%- endcall -%}
        {{ log(model.name ~ ": rebuilt from ingestion batches 1.." ~ last_batch_id) }}
    {%- elif first_batch_id > last_batch_id -%}
        {%- call statement('main') -%}
            select 'up to date through ingestion batch {{ last_batch_id }}' as status
        {%- endcall -%}
    {%- else -%}
        {%- set new_rows = make_temp_relation(this, '__kappa_new').include(database=false, schema=false) -%}
        {%- call statement('create_new_rows') -%}
            {{ create_table_as(true, new_rows, compiled_code) }}
        {%- endcall -%}
        {%- call statement('set_dynamic_overwrite') -%}
            set spark.sql.sources.partitionOverwriteMode = DYNAMIC
        {%- endcall -%}
        {%- call statement('main') -%}
            {{ get_insert_overwrite_sql(new_rows, this, existing_relation) }}
        {%- endcall -%}
        {{ log(model.name ~ ": ingestion batches " ~ first_batch_id ~ ".." ~ last_batch_id) }}
    {%- endif -%}

    {%- if full_refresh or first_batch_id <= last_batch_id -%}
        {% do record_consumed_batches(this, first_batch_id, last_batch_id, full_refresh) %}
    {%- endif -%}

    {{ run_hooks(post_hooks) }}
    {% do persist_docs(this, model) %}
    {{ return({'relations': [this]}) }}
{% endmaterialization %}
