{% materialization exact_incremental, adapter='spark' %}
    {#- The incremental contract: a model's table always equals what a full refresh over the
        same log would build.

        - New input is found by ingestion batch, never by wall-clock time; which batches a model
          has consumed is committed to a ledger after its table is written (_record_consumed_batches:
          a full refresh at once, an incremental run's range with the run's others at its end).
        - A model partitioned by its batch column (`_ingestion_batch_id`) first ('batches' mode, see _contract_mode)
          writes rows that each belong to one new batch (in_new_batches): a run replaces exactly
          its batches' partitions (insert overwrite), so a rerun rewrites instead of appending.
        - A model partitioned by the UTC day of its event_time ('days' mode: windows, sessions)
          recomputes every day that data of its new batches can reach (_recomputed_days) from
          all of its input for those days (in_recomputed_days): a run drops those days'
          partitions and writes their rows again in one pass (_write_partitions; a day that
          comes out empty, two sessions merged away, stays dropped), and records
          the days in the ledger for its own downstream models.
        - A model partitioned by kappa.key_bucket() of its `recompute_key` ('keys' mode: current state,
          history, folds per user, order or product) does the same per key bucket: it recomputes
          every bucket that holds a key of its new input, from all of those keys' input.
        - A gap in the log's receipts or in the ledger stops the run with an error, and so does
          a model whose columns are no longer its table's (_check_model_columns): rebuilt, never
          appended to. A run with nothing to write skips that check when the model's SQL is as
          at its last write (_sql_fingerprint, recorded in the ledger).
        - `--full-refresh` (or a first build) rebuilds the table from every batch.
        - On Delta (file_format 'delta') each of these writes is one atomic commit: `create or
          replace table` for a rebuild, `insert into ... replace where` for the batches, days or
          buckets a run replaces (or `merge`, for a keys model that asks for it with
          incremental_strategy 'merge' and its unique_key). Every run of a model is a version
          of its table.
        This materialization plans the run and routes it to one write strategy (write/:
        _rebuild, _write_batches, _write_recomputed, _write_nothing); the ledger records the
        run after the write. -#}
    {%- set mode = kappa._contract_mode(model) -%}
    {#- a merge asked of a model that cannot merge stops here, on a first build too -#}
    {%- do kappa._key_merge() -%}
    {%- set existing_relation = load_relation(this) -%}
    {#- rebuilt on a first build and a full refresh, and also when the table has nothing in the
        ledger (it was not built under the contract: say, by an older version of the model as a
        plain table) or has the other file format (parquet before a switch to Delta, or back):
        kappa.is_incremental() decides, as it did for the compiled SQL -#}
    {%- set full_refresh = not kappa.is_incremental() -%}
    {%- set first_batch_id = 1 if full_refresh else kappa.consumed_through(this) + 1 -%}
    {#- the batches the compiled SQL read: worked out once per model and run, so the ledger
        records exactly what in_new_batches() let through -#}
    {%- set last_batch_id = kappa._last_new_batch() -%}
    {%- if not full_refresh and first_batch_id > last_batch_id + 1 -%}
        {% do exceptions.raise_compiler_error(
            this ~ " has consumed through ingestion batch " ~ (first_batch_id - 1)
            ~ " but its inputs hold only " ~ last_batch_id ~ ": the log or an upstream model was "
            ~ "rebuilt. Rebuild this model too: dbt build --full-refresh --select " ~ model.name ~ "+"
        ) %}
    {%- endif -%}
    {%- set partitions = none -%}
    {%- if mode != 'batches' and not full_refresh and first_batch_id <= last_batch_id -%}
        {%- set partitions = kappa._planned_partitions(model) -%}
        {%- if partitions is none -%}
            {#- an upstream recomputing model was rebuilt in full: so is this one -#}
            {%- set full_refresh = true -%}
            {%- set first_batch_id = 1 -%}
        {%- endif -%}
    {%- endif -%}
    {#- the fingerprint of the model's SQL, recorded with the batches (_sql_fingerprint) -#}
    {%- set fingerprint = kappa._sql_fingerprint() -%}
    {%- set table_columns = none -%}
    {%- set nothing_to_write = first_batch_id > last_batch_id or partitions == [] -%}
    {%- if not full_refresh and nothing_to_write
        and kappa._ledger_ranges(this.schema).get(this.identifier, {}).get('sql_fingerprint') == fingerprint -%}
        {#- nothing to write, and the SQL as at the model's last write (whose columns were
            checked, or built the table): no column check, which costs two statements a model
            (most of a run with nothing new). A run with something to write always checks. -#}
        {{ log(model.name ~ ": nothing to write, its SQL as at its last write: columns not checked") }}
    {%- elif not full_refresh -%}
        {#- a model whose columns changed is rebuilt, never appended to (clear error otherwise);
            the table's columns, described once, are what the write selects -#}
        {%- set table_columns = kappa._check_model_columns(existing_relation) -%}
    {%- endif -%}

    {{ run_hooks(pre_hooks) }}
    {%- do kappa._fault_point('before_write') -%}

    {#- the write: one strategy per case (write/) -#}
    {%- if full_refresh -%}
        {%- do kappa._rebuild(existing_relation, last_batch_id) -%}
    {%- elif first_batch_id > last_batch_id -%}
        {%- do kappa._write_nothing('up to date through ingestion batch ' ~ last_batch_id) -%}
    {%- elif mode == 'batches' -%}
        {%- do kappa._write_batches(table_columns, first_batch_id, last_batch_id) -%}
    {%- elif partitions | length == 0 -%}
        {%- do kappa._write_nothing(
            'ingestion batches ' ~ first_batch_id ~ '..' ~ last_batch_id ~ ' touch none of its partitions'
        ) -%}
    {%- else -%}
        {%- do kappa._write_recomputed(
            existing_relation, partitions, table_columns, mode, first_batch_id, last_batch_id
        ) -%}
    {%- endif -%}

    {%- do kappa._fault_point('after_write') -%}
    {%- if full_refresh or first_batch_id <= last_batch_id -%}
        {% do kappa._record_consumed_batches(this, first_batch_id, last_batch_id, full_refresh, partitions, fingerprint) %}
    {%- endif -%}
    {%- do kappa._fault_point('after_commit') -%}

    {{ run_hooks(post_hooks) }}
    {% do persist_docs(this, model) %}
    {{ return({'relations': [this]}) }}
{% endmaterialization %}
