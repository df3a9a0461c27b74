{% macro generate_schema_name(custom_schema_name, node) %}
    {#- The seeds load once into one schema (kappa_it_seeds) that every build reads; the models
        go to the target's schema, one per build of a test. -#}
    {{ return(custom_schema_name if custom_schema_name is not none else target.schema) }}
{% endmacro %}
