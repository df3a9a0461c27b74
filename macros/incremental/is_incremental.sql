{% macro is_incremental() %}
    {#- dbt's is_incremental(), extended to the project's exact_incremental materialization:
        true when the model's table exists, is incremental, this is not a full refresh, and (for
        exact_incremental) the ledger records what it consumed and the table has the model's
        file format. The materialization decides with it whether to rebuild, so the compiled
        SQL and the write always agree.
        Models do not call it themselves; in_new_batches() and before_new_batches() do. -#}
    {% if not execute %}
        {{ return(false) }}
    {% endif %}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {% if relation is none or relation.type != 'table' or should_full_refresh() %}
        {{ return(false) }}
    {% endif %}
    {% if model.config.materialized == 'exact_incremental' %}
        {#- a table of the other format (parquet before a switch to Delta, or back) cannot be
            written in place: rebuilt -#}
        {% set delta = model.config.get('file_format') == 'delta' %}
        {% if relation.is_delta is not none and relation.is_delta != delta %}
            {{ return(false) }}
        {% endif %}
        {#- a table the ledger knows nothing of was not built under the contract: rebuilt -#}
        {{ return(consumed_through(relation) > 0) }}
    {% endif %}
    {{ return(model.config.materialized == 'incremental') }}
{% endmacro %}
