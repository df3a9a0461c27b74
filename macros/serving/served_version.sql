{#- The version of the target's schema served when kappa-shop last built, reprocessed, rolled
    back or listed it in this project directory, or none. kappa-shop records it in
    .kappa_shop/macros/served_versions.sql (git-ignored; a macro path of dbt_project.yml), so
    that dbt knows it when it parses, before any query. -#}
{% macro served_version() -%}
    {%- set recorded = kappa_shop_served_versions() if kappa_shop_served_versions is defined else {} -%}
    {{ return(recorded.get(target.name, {}).get(target.schema)) }}
{%- endmacro %}
