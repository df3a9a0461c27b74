{% macro _ingested_through() %}
    {#- The last ingestion batch of the log (0 if none), from the ingestion receipts. The
        receipts must number 1..N without a gap: a missing batch means the raw tables and the
        ingestion checkpoint disagree, which is reported, never skipped over. Read once per
        invocation (_run_state): every model of a run reads the log up to the same batch, and a
        batch receipted while the run goes on waits for the next run. -#}
    {% if not execute %}
        {{ return(0) }}
    {% endif %}
    {% set state = kappa._run_state() %}
    {% if state['ingested_through'] is not none %}
        {{ return(state['ingested_through']) }}
    {% endif %}
    {#- the receipts: a dbt source (var `kappa_receipts`, [source name, table name]) with one
        row per ingestion batch, its id in column `ingestion_batch_id` -#}
    {% set receipts = kappa._receipts_relation() %}
    {% set query %}
        select
            count(*) as batches,
            coalesce(min(ingestion_batch_id), 0) as first_batch_id,
            coalesce(max(ingestion_batch_id), 0) as last_batch_id
        from {{ receipts }}
    {% endset %}
    {% set row = run_query(query).rows[0] %}
    {% if row['batches'] > 0 and (row['first_batch_id'] != 1 or row['batches'] != row['last_batch_id']) %}
        {% set missing_query %}
            select id from range(1, {{ row['last_batch_id'] + 1 }}) as ids
            where id not in (select ingestion_batch_id from {{ receipts }})
            order by id
            limit 20
        {% endset %}
        {% set missing = run_query(missing_query).columns[0].values() | list %}
        {% set gap = ("batch " ~ missing[0] ~ " is") if missing | length == 1
            else ("batches " ~ missing | join(', ') ~ " are") %}
        {% do exceptions.raise_compiler_error(
            "The ingestion receipts in " ~ receipts ~ " have a gap: " ~ gap ~ " missing (receipts run"
            ~ " from " ~ row['first_batch_id'] ~ " to " ~ row['last_batch_id'] ~ "). Models consume"
            ~ " batches in order and will not pass over a gap, so no model consumed a batch: while"
            ~ " the missing batches are still being ingested, retry after their receipts land (a"
            ~ " scheduler can treat this error as 'not yet'); if they were lost, re-ingest them, or"
            ~ " rebuild the raw tables and models from the log."
        ) %}
    {% endif %}
    {#- with the var kappa_receipts_record_count: each receipt counts its batch's rows -#}
    {% do kappa._check_receipt_counts(row['last_batch_id'] | int) %}
    {% do state.update({'ingested_through': row['last_batch_id'] | int}) %}
    {{ return(state['ingested_through']) }}
{% endmacro %}
