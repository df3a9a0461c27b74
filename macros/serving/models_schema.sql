{#- The schema this run builds models in. The target's schema (`kappa_shop`) is a serving
    schema once `kappa-shop build` has built it: readers query its views, and the models live in
    a version of it (`kappa_shop__v1`). var kappa_version chooses:
    - left out (a person's `dbt run`, `dbt build`, `dbt test`): the version the schema serves,
      as kappa-shop recorded it in this project (served_version());
    - a number: that version (building one that is not served is a choice made here);
    - null (kappa-shop's builds into schemas of their own: the proof, the benchmark): the
      target's schema itself.
    check_not_serving_schema stops a run whose choice does not hold (a record behind the
    registry, or the serving schema itself). -#}
{% macro models_schema() -%}
    {%- set chosen = var('kappa_version', 'served') -%}
    {%- set version = served_version() if chosen == 'served' else chosen -%}
    {{ target.schema if version is none else target.schema ~ '__v' ~ version }}
{%- endmacro %}
