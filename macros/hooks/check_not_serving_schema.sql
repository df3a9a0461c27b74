{#- On-run-start hook: a serving schema (one `kappa-shop build` or `reprocess` serves, with a
    registry of its versions, kappa_versions) holds views on the served version; dbt must not
    build models there, where they would replace the views readers query. Stops such a run with
    one message naming the served version's schema and how to build it. Renders no SQL. -#}
{% macro check_not_serving_schema() %}
  {%- if execute and flags.WHICH in ('run', 'build', 'seed', 'snapshot') -%}
    {%- set raw_schema = var('raw_schema', target.schema ~ '_raw') -%}
    {%- set served_names = [] -%}
    {%- for unique_id in selected_resources if unique_id in graph.nodes -%}
      {%- set node = graph.nodes[unique_id] -%}
      {%- if node.resource_type in ('model', 'seed', 'snapshot')
            and node.schema != raw_schema
            and (node.schema == target.schema or node.schema.startswith(target.schema ~ '_')) -%}
        {%- do served_names.append(node.schema ~ '.' ~ node.alias) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if served_names and adapter.get_relation(
          database=none, schema=target.schema, identifier='kappa_versions') is not none -%}
      {%- set served = run_query(
            "select max_by(version, struct(recorded_at, sequence)) as version from "
            ~ target.schema ~ ".kappa_versions where event = 'switched'").columns[0].values()[0] -%}
      {{ exceptions.raise_compiler_error(
          target.schema ~ " is a serving schema: " ~ served_names[0] ~ " and the other names "
          ~ "there are views on version " ~ served ~ " (" ~ target.schema ~ "__v" ~ served
          ~ "), which this run would replace. Build it with `kappa-shop build`, or point dbt "
          ~ "at the served version: KAPPA_SHOP_SCHEMA=" ~ target.schema ~ "__v" ~ served
          ~ " and --vars 'raw_schema: " ~ raw_schema ~ "' (docs/reprocessing.md)") }}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}
