{% macro generate_schema_name(custom_schema_name, node) %}
    {#- The seeds load once into one schema (kappa_it_seeds) that every build reads; the models
        go to the target's schema, one per build of a test, or to the schema var
        kappa_it_models_schema names: a project whose models live outside its target schema
        (as a serving layer's versions do; check_models_elsewhere). -#}
    {{ return(custom_schema_name if custom_schema_name is not none
        else var('kappa_it_models_schema', target.schema)) }}
{% endmacro %}
