{% macro deliver(arrivals, receipt=true) %}
    {#- Ingest the seed log's rows of the given arrival groups as the log's next ingestion batch:
        appended to `<log schema>.raw_events` under a new `_ingestion_batch_id`, then its
        receipt written (the way an ingestion job commits a batch). `receipt=false` leaves the
        receipt out (a batch whose ingestion was killed before its receipt). -#}
    {%- set log_schema = env_var('KAPPA_IT_LOG_SCHEMA', 'kappa_it_log') -%}
    {%- do run_query('create schema if not exists ' ~ log_schema) -%}
    {%- do run_query('create table if not exists ' ~ log_schema ~ '.raw_events (event_id string, user_id string, kind string, event_at timestamp, amount int, _ingestion_batch_id bigint) using parquet partitioned by (_ingestion_batch_id)') -%}
    {%- do run_query('create table if not exists ' ~ log_schema ~ '.ingestion_batches (ingestion_batch_id bigint) using parquet') -%}
    {%- set last = run_query('select coalesce(max(_ingestion_batch_id), 0) from ' ~ log_schema ~ '.raw_events').rows[0][0] -%}
    {%- set next_batch = last + 1 -%}
    {%- do run_query(
        'insert into ' ~ log_schema ~ '.raw_events partition (_ingestion_batch_id = ' ~ next_batch ~ ')'
        ~ ' select event_id, user_id, kind, cast(event_at as timestamp), cast(amount as int)'
        ~ ' from kappa_it_seeds.events where arrival in (' ~ arrivals | join(', ') ~ ')') -%}
    {%- if receipt -%}
        {%- do run_query('insert into ' ~ log_schema ~ '.ingestion_batches values (' ~ next_batch ~ ')') -%}
    {%- endif -%}
    {{ log('delivered arrival groups ' ~ arrivals | join(',') ~ ' as ingestion batch ' ~ next_batch, info=true) }}
{% endmacro %}

{% macro hold_run_lock(holder) %}
    {#- Record `holder` as a run that holds the target schema's run lock now, in this Spark
        application (as a concurrent run of the same server would). -#}
    {%- do run_query('create schema if not exists ' ~ target.schema) -%}
    {%- set lock = kappa._run_lock_relation(target.schema) -%}
    {%- set application = run_query('set spark.app.id').rows[0][1] -%}
    {%- do run_query("insert overwrite table " ~ lock ~ " partition (holder = '" ~ holder ~ "')"
        ~ " select 'run', '" ~ target.name ~ "', '" ~ application ~ "', current_timestamp()") -%}
{% endmacro %}
