{% macro consumed_through(relation) %}
    {#- The last ingestion batch the model behind `relation` has consumed (0 if none). Its
        ledger ranges must tile 1..N with no gap or overlap; anything else is an error, never
        passed over. Asked many times per model (each kappa.in_new_batches(), the materialization,
        every child's _available_through): answered from the schema's ledger as read once per
        invocation and kept current by _record_consumed_batches (_ledger_ranges). -#}
    {% if not execute %}
        {{ return(0) }}
    {% endif %}
    {% set row = kappa._ledger_ranges(relation.schema).get(relation.identifier) %}
    {% if row is none %}
        {{ return(0) }}
    {% endif %}
    {% if row['first_batch_id'] != 1 or row['batches'] != row['last_batch_id'] %}
        {% do exceptions.raise_compiler_error(
            "The batch ledger of " ~ relation ~ " is not one unbroken range 1.." ~ row['last_batch_id']
            ~ " (it starts at " ~ row['first_batch_id'] ~ " and covers " ~ row['batches']
            ~ " batches): a gap in consumption. Rebuild it with `dbt build --full-refresh --select "
            ~ relation.identifier ~ "+`."
        ) %}
    {% endif %}
    {{ return(row['last_batch_id']) }}
{% endmacro %}
