{% macro is_incremental() %}
    {#- dbt's is_incremental(), extended to the project's exact_incremental materialization:
        true when the model's table exists, is incremental, this is not a full refresh, and (for
        exact_incremental) the ledger records what it consumed.
        Models do not call it themselves; in_new_batches() and before_new_batches() do. -#}
    {% if not execute %}
        {{ return(false) }}
    {% endif %}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {% if relation is none or relation.type != 'table' or should_full_refresh() %}
        {{ return(false) }}
    {% endif %}
    {% if model.config.materialized == 'exact_incremental' %}
        {#- a table the ledger knows nothing of was not built under the contract: rebuilt -#}
        {{ return(consumed_through(relation) > 0) }}
    {% endif %}
    {{ return(model.config.materialized == 'incremental') }}
{% endmacro %}
