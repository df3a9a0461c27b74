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
          buckets a run replaces. Every run of a model is a version of its table. -#}
    {%- set mode = kappa._contract_mode(model) -%}
    {%- set delta = config.get('file_format') == 'delta' -%}
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

    {%- if full_refresh and delta -%}
        {#- Delta: `create or replace table`, one atomic commit (a run killed mid-write leaves
            the old table), and a new version of the table, whose history stays readable
            (time travel). A table of another format (built before the switch) is dropped
            first: Delta replaces only Delta tables. -#}
        {%- if existing_relation is not none and not existing_relation.is_delta -%}
            {% do adapter.drop_relation(existing_relation) %}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ create_table_as(false, this, compiled_code) }}
        {%- endcall -%}
        {{ log(model.name ~ ": rebuilt from ingestion batches 1.." ~ last_batch_id) }}
    {%- elif full_refresh -%}
        {#- built under a name of its own and renamed into place when complete: a run killed
            mid-write leaves the old table and its ledger as they were (and a table that
            _drop_build_leftovers drops), never files without a table, which would block the
            next create -#}
        {%- set build_relation = this.incorporate(path={
            'identifier': this.identifier ~ '__kappa_build_' ~ invocation_id.replace('-', '')[:12]
        }, type='table') -%}
        {%- call statement('main') -%}
            {{ create_table_as(false, build_relation, compiled_code) }}
        {%- endcall -%}
        {%- if existing_relation is not none and existing_relation.is_delta -%}
            {#- a Delta table, built before a switch back to parquet: Spark's DROP TABLE looks
                up the table's provider, which a session without Delta's jars lacks, unless it
                runs as the v1 command, which drops the table and its files by name. (Left on
                for the rest of the session, as models run in parallel threads: for the session
                catalog's parquet tables the v1 commands do what the v2 ones do.) -#}
            {%- call statement('v1_commands') -%} set spark.sql.legacy.useV1Command = true {%- endcall -%}
            {% do adapter.drop_relation(existing_relation) %}
        {%- elif existing_relation is not none -%}
            {% do adapter.drop_relation(existing_relation) %}
        {%- endif -%}
        {% do adapter.rename_relation(build_relation, this.incorporate(type='table')) %}
        {{ log(model.name ~ ": rebuilt from ingestion batches 1.." ~ last_batch_id) }}
    {%- elif first_batch_id > last_batch_id -%}
        {#- nothing to write: dbt's noop_statement gives the run its result without a statement
            to Spark (the run's target/run file holds the comment) -#}
        {%- call noop_statement('main', 'up to date through ingestion batch ' ~ last_batch_id) -%}
            -- up to date through ingestion batch {{ last_batch_id }}: nothing to write
        {%- endcall -%}
    {%- elif mode == 'batches' and delta -%}
        {#- Delta: the new batches' rows replace whatever the table holds for those batches, in
            one atomic commit (Delta checks that every row written is in the range) -#}
        {%- set columns = table_columns | map(attribute='quoted') | join(', ') -%}
        {%- call statement('main') -%}
            insert into {{ this }}
            replace where {{ kappa._batch_column() }} between {{ first_batch_id }} and {{ last_batch_id }}
            select {{ columns }}
            from (
                {{ compiled_code }}
            ) as model_rows
        {%- endcall -%}
        {{ log(model.name ~ ": ingestion batches " ~ first_batch_id ~ ".." ~ last_batch_id) }}
    {%- elif mode == 'batches' -%}
        {#- the new batches' partitions overwritten with the model's rows (dynamic partition
            overwrite: the other batches stay), selected straight from the model's query in the
            table's column order (partition columns last): no temporary view of the new rows
            and no second describe of the table, as dbt-spark's insert_overwrite strategy would
            issue (two statements of the six a batch model's run took) -#}
        {%- call statement('set_dynamic_overwrite') -%}
            set spark.sql.sources.partitionOverwriteMode = DYNAMIC
        {%- endcall -%}
        {%- set columns = table_columns | map(attribute='quoted') | join(', ') -%}
        {%- call statement('main') -%}
            insert overwrite table {{ this }}
            {{ partition_cols(label="partition") }}
            select {{ columns }}
            from (
                {{ compiled_code }}
            ) as model_rows
        {%- endcall -%}
        {{ log(model.name ~ ": ingestion batches " ~ first_batch_id ~ ".." ~ last_batch_id) }}
    {%- elif partitions | length == 0 -%}
        {%- call noop_statement('main', 'ingestion batches ' ~ first_batch_id ~ '..' ~ last_batch_id ~ ' touch none of its partitions') -%}
            -- ingestion batches {{ first_batch_id }}..{{ last_batch_id }} touch none of its partitions: nothing to write
        {%- endcall -%}
    {%- else -%}
        {%- set written = kappa._write_partitions(existing_relation, partitions, table_columns) -%}
        {%- set recomputed = model.name ~ ": ingestion batches " ~ first_batch_id ~ ".." ~ last_batch_id ~ " recomputed "
            ~ (partitions | length ~ " day(s), " ~ partitions[0] ~ ".." ~ partitions[-1] if mode == 'days'
               else partitions | length ~ " of " ~ var('kappa_key_buckets', 16) ~ " key bucket(s)") -%}
        {{ log(recomputed) }}
        {#- reported at the run's end, with the rows those partitions then hold (_report_recomputed) -#}
        {%- do kappa._run_state()['recomputed'].append({
            'line': this.schema ~ "." ~ recomputed,
            'rows': "select count(*) as written from " ~ this ~ " where " ~ written,
        }) -%}
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
