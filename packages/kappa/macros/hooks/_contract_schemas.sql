{% macro _contract_schemas() %}
    {#- The schemas this project's exact_incremental models are built in (each model's schema as
        the project's generate_schema_name places it), sorted; the target's schema when it has
        none. The contract keeps its bookkeeping beside its models: each of these schemas has
        its batch ledger and its run lock, which the hooks take, read, compact and release. A
        project whose models all go to the target schema (the usual case) has one. -#}
    {%- set schemas = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.materialized == 'exact_incremental'
        and node.schema not in schemas -%}
        {%- do schemas.append(node.schema) -%}
    {%- endfor -%}
    {{ return(schemas | sort if schemas | length > 0 else [target.schema]) }}
{% endmacro %}
