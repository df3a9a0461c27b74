{% macro stored_payload() %}
    {#- The select item of a deliveries model's `payload`: the event's payload as VARIANT (each
        value keeps its JSON type), or on Iceberg (file_format 'iceberg') its JSON text. An
        Iceberg table in the Hive metastore has its columns written there too, and the
        metastore Spark embeds (Hive 2.3) has no VARIANT type: Iceberg refuses the table.
        The event models read it back with delivered_columns(). -#}
    {{- "to_json(payload) as payload" if payload_as_text() else "payload" -}}
{% endmacro %}

{% macro delivered_columns() %}
    {#- The columns an event model selects from its deliveries model: all of them, with
        `payload` as VARIANT again where the deliveries model stored its JSON text (Iceberg:
        stored_payload). -#}
    {{- "* except (payload), parse_json(payload) as payload" if payload_as_text() else "*" -}}
{% endmacro %}

{% macro payload_as_text() %}
    {#- Whether the models are Iceberg tables, whose deliveries models store the payload as
        JSON text. (When sqlfluff lints the models, its stand-in for `config` has no `get`:
        the VARIANT form is the one linted.) -#}
    {{ return(config.get is defined and config.get('file_format') == 'iceberg') }}
{% endmacro %}
