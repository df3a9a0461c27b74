{% macro parse_event_time(value, time_format='rfc3339') %}
    {#- The instant (a UTC timestamp) a record's event time names, or null when it names none.
        `value` is the VARIANT of the record's event time field; `time_format` the stream's
        (var log_streams, `event_time_format`):
        - rfc3339 (the default): a JSON string in RFC 3339's date-time form,
          `2024-03-01T10:00:00Z`, with or without a fraction of a second of 1 to 6 digits
          (up to microseconds), `Z` or a numeric offset (`+02:00`, `-04:30`); `T` and `Z`
          may be lower case and `T` a space (RFC 3339, 5.6). Anything else (no offset: a local
          time of no known zone; more than 6 digits; `+0200`; a day or hour out of range) names
          no instant.
        - epoch_millis: a JSON integer, milliseconds since 1970-01-01T00:00:00Z, within the
          years 1 to 9999 (negative: before the epoch, which staging then quarantines as
          such). -#}
    {%- if time_format == 'rfc3339' -%}
        {%- set text = "upper(try_variant_get(" ~ value ~ ", '$', 'string'))" -%}
        case
            when schema_of_variant({{ value }}) = 'STRING'
                and {{ text }} rlike
                    '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$'
                then to_timestamp(
                    regexp_replace({{ text }}, ' ', 'T'), "yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]XXX"
                )
        end
    {%- elif time_format == 'epoch_millis' -%}
        case
            when {{ json_type_check(value, 'integer') }}
                and try_variant_get({{ value }}, '$', 'bigint') between -62135596800000 and 253402300799999
                then timestamp_millis(try_variant_get({{ value }}, '$', 'bigint'))
        end
    {%- else -%}
        {% do exceptions.raise_compiler_error(
            "parse_event_time: unknown event_time_format " ~ time_format
            ~ " (var log_streams): rfc3339 or epoch_millis"
        ) %}
    {%- endif -%}
{%- endmacro %}
