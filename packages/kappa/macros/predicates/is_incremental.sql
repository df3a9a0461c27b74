{% macro is_incremental() %}
    {#- dbt's is_incremental(), for the exact_incremental materialization: true when the
        model's table exists, this is not a full refresh, the ledger records what the table
        consumed and the table has the model's file format. A table the ledger knows nothing of
        (not built under the contract) or of the other format (parquet before a switch to
        Delta or Iceberg, or back) is rebuilt. The materialization decides with it too, so the compiled
        SQL and the write agree. In a unit test it answers what dbt's is_incremental() answers
        (which unit tests override); for a model of another materialization, likewise. -#}
    {% if not execute %}
        {{ return(false) }}
    {% endif %}
    {% if model.resource_type == 'unit_test' or model.config.materialized != 'exact_incremental' %}
        {{ return(is_incremental()) }}
    {% endif %}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {% if relation is none or relation.type != 'table' or should_full_refresh() %}
        {{ return(false) }}
    {% endif %}
    {% if kappa._relation_format(relation) not in [none, kappa._table_format()] %}
        {{ return(false) }}
    {% endif %}
    {{ return(kappa.consumed_through(relation) > 0) }}
{% endmacro %}
