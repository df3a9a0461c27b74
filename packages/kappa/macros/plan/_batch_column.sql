{% macro _batch_column() %}
    {#- The column of every model's input that holds the ingestion batch id (var
        `kappa_batch_column`, default `_ingestion_batch_id`). -#}
    {{ return(var('kappa_batch_column', '_ingestion_batch_id')) }}
{% endmacro %}
