{% macro _ledger_columns() %}
    {#- The batch ledger's columns, in table order, defined here once for every statement that
        creates, writes or reads it: one row per run of a model, with the first and last
        ingestion batch it consumed, how (full_refresh, incremental, compacted), when, for a
        recomputing model the partitions (days or key buckets) it rewrote (null: all of them),
        and the fingerprint of the SQL that wrote the table (_sql_fingerprint; null on a
        compacted row and on rows recorded before the column existed, which _ledger_ranges
        adds to an older ledger). The last two are the partition columns. -#}
    {{ return([
        {'name': 'last_batch_id', 'type': 'bigint'},
        {'name': 'refresh_mode', 'type': 'string'},
        {'name': 'recorded_at', 'type': 'timestamp'},
        {'name': 'recomputed_partitions', 'type': 'array<string>'},
        {'name': 'sql_fingerprint', 'type': 'string'},
        {'name': 'model_name', 'type': 'string'},
        {'name': 'first_batch_id', 'type': 'bigint'},
    ]) }}
{% endmacro %}
