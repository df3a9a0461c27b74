{% macro is_incremental() %}
    {#- dbt's is_incremental(), extended to the project's exact_incremental materialization:
        true when the model's table exists, is incremental, and this is not a full refresh.
        Models do not call it themselves; in_new_batches() and before_new_batches() do. -#}
    {% if not execute %}
        {{ return(false) }}
    {% endif %}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {{ return(
        relation is not none
        and relation.type == 'table'
        and model.config.materialized in ('incremental', 'exact_incremental')
        and not should_full_refresh()
    ) }}
{% endmacro %}
