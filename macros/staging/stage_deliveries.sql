{% macro stage_deliveries(raw_relation, topic) %}
    {#- Every delivery (raw row) of the new ingestion batches of one topic, parsed once into
        VARIANT, with the envelope typed and `invalid_reason` saying why a record is malformed
        (null when it is valid). A landed line carries its topic, partition, offset and key in
        its JSON; a record ingested from Kafka (`_source_file` kafka:...) is the broker's
        record as JSON, whose value is the event and whose own fields say where it lies. The rules come from var `log_streams`; the first that fails
        names the reason:
        invalid_utf8 (bytes that are not UTF-8: Spark would read them as U+FFFD, altering the
        event; a Kafka record's value is checked at ingestion), not_json, oversize_record, missing_required_field (envelope), null_key,
        unknown_event_type, missing_required_field (payload), wrong_type,
        unparseable_event_time, event_time_in_future (year 2100 or later),
        event_time_before_epoch. -#}
    {%- set stream = var('log_streams')[topic] -%}
    {%- set event_types = stream['event_types'] -%}
    {#- how the stream's producers write event time: parse_event_time -#}
    {%- set time_format = stream.get('event_time_format', 'rfc3339') -%}
    {#- where the stream's producers put the event's id, type, time and payload: JSON paths
        below the record (var log_streams, `event_fields`; these names by default) -#}
    {%- set named = stream.get('event_fields', {}) -%}
    {%- set id_path = "'$." ~ named.get('event_id', 'event_id') ~ "'" -%}
    {%- set type_path = "'$." ~ named.get('event_type', 'event_type') ~ "'" -%}
    {%- set time_path = "'$." ~ named.get('event_time', 'event_time') ~ "'" -%}
    {%- set payload_path = "'$." ~ named.get('payload', 'payload') ~ "'" -%}
with

deliveries as (
    select
        *,
        -- the event as its producer wrote it: a landed line, or a Kafka record's value
        if(
            _source_file like 'kafka:%', get_json_object(raw_record, '$.value'), raw_record
        ) as event_text,
        -- where the log's fields are: the broker's record (Kafka), or the landed line itself
        _source_file like 'kafka:%' as from_broker
    from {{ raw_relation }}
    where {{ kappa.in_new_batches('_ingestion_batch_id') }}
),

new_event_ids as (
    -- the event ids of the new records, for the look-up of their earlier deliveries: read
    -- without parsing the records into VARIANT and classifying them (the statement would do
    -- that twice); every valid record is JSON with a string event_id, so this holds the id of
    -- every new valid delivery
    select get_json_object(event_text, {{ id_path }}) as event_id
    from deliveries
),

parsed as (
    select
        try_parse_json(event_text) as record,
        if(from_broker, try_parse_json(raw_record), null) as broker_record,
        octet_length(event_text) as record_bytes,
        raw_record,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from deliveries
),

located as (
    select
        *,
        coalesce(broker_record, record) as log_fields
    from parsed
),

envelope as (
    select
        try_variant_get(record, {{ id_path }}, 'string') as event_id,
        try_variant_get(record, {{ type_path }}, 'string') as event_type,
        try_variant_get(log_fields, '$.key', 'string') as partition_key,
        try_variant_get(record, {{ time_path }}, 'string') as event_time,
        {{ parse_event_time("variant_get(record, " ~ time_path ~ ")", time_format) }} as occurred_at,
        try_variant_get(log_fields, '$.partition', 'int') as log_partition,
        try_variant_get(log_fields, '$.offset', 'bigint') as log_offset,
        variant_get(log_fields, '$.key') as key_value,
        try_variant_get(record, '$.schema_version', 'int') as schema_version,
        variant_get(record, {{ payload_path }}) as payload,
        record,
        broker_record,
        record_bytes,
        raw_record,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from located
),

classified as (
    select
        *,
        case
            when not is_valid_utf8(raw_record)
                or coalesce(try_variant_get(broker_record, '$.value_not_utf8', 'boolean'), false)
                then 'invalid_utf8'
            when record is null then 'not_json'
            when record_bytes > {{ var('max_record_bytes') }} then 'oversize_record'
            when
                variant_get(record, {{ id_path }}) is null
                or variant_get(record, {{ time_path }}) is null
                or log_partition is null
                or log_offset is null
                then 'missing_required_field'
            when schema_of_variant(key_value) is distinct from 'STRING'
                then 'null_key'
            when event_type is null
                or event_type not in ('{{ event_types.keys() | list | join("', '") }}')
                then 'unknown_event_type'
            {%- for event_type, fields in event_types.items() %}
            when event_type = '{{ event_type }}' and (
                {%- for name in fields %}
                variant_get(payload, '$.{{ name }}') is null{{ ' or' if not loop.last }}
                {%- endfor %}
            ) then 'missing_required_field'
            when event_type = '{{ event_type }}' and not (
                {%- for name, json_type in fields.items() %}
                {{ json_type_check("variant_get(payload, '$." ~ name ~ "')", json_type) }}{{ ' and' if not loop.last }}
                {%- endfor %}
            ) then 'wrong_type'
            {%- endfor %}
            when schema_of_variant(variant_get(record, {{ id_path }})) != 'STRING'
                then 'wrong_type'
            when occurred_at is null then 'unparseable_event_time'
            when occurred_at >= timestamp '2100-01-01 00:00:00' then 'event_time_in_future'
            when occurred_at < timestamp '1970-01-01 00:00:00' then 'event_time_before_epoch'
        end as invalid_reason
    from envelope
),

staged as (
    select
        -- ids
        event_id,
        partition_key,
        -- attributes
        '{{ topic }}' as topic,
        event_type,
        schema_version,
        payload,
        -- what a redelivery must repeat to be a duplicate rather than a conflict
        sha2(to_json(named_struct(
            'key', key_value,
            'event_type', variant_get(record, {{ type_path }}),
            'event_time', variant_get(record, {{ time_path }}),
            'payload', payload
        )), 256) as content_hash,
        invalid_reason,
        raw_record,
        record_bytes,
        -- timestamps
        occurred_at,
        -- pipeline metadata
        log_partition,
        log_offset,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from classified
),

outcomes as (
    {{ delivery_outcomes('staged', this if kappa.is_incremental() else none, 'new_event_ids') }}
),

final as (
    select
        -- ids
        event_id,
        partition_key,
        -- attributes
        topic,
        event_type,
        schema_version,
        {{ stored_payload() }},
        content_hash,
        invalid_reason,
        outcome,
        quarantine_reason,
        raw_record,
        record_bytes,
        -- timestamps
        occurred_at,
        -- pipeline metadata
        log_partition,
        log_offset,
        _source_file,
        _ingested_at,
        _ingestion_batch_id
    from outcomes
)

select * from final
{%- endmacro %}
