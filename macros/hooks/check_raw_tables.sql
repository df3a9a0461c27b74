{#- On-run-start hook: before a run or build that selects models, make sure the raw tables the
    sources name exist, and say in one message what to check when they do not (a wrong
    KAPPA_SHOP_SCHEMA, a target that was never ingested into, another Thrift Server). Without
    it, every staging model fails on its own with TABLE_OR_VIEW_NOT_FOUND. Renders no SQL. -#}
{% macro check_raw_tables() %}
  {%- if execute and flags.WHICH in ('run', 'build') -%}
    {%- set models_selected = [] -%}
    {%- for unique_id in selected_resources if unique_id.startswith('model.') -%}
      {%- do models_selected.append(unique_id) -%}
    {%- endfor -%}
    {%- if models_selected -%}
      {%- set missing = [] -%}
      {%- for source in graph.sources.values() if source.package_name == project_name -%}
        {%- set relation = adapter.get_relation(
              database=source.database, schema=source.schema, identifier=source.identifier) -%}
        {%- if relation is none -%}
          {%- do missing.append(source.schema ~ '.' ~ source.identifier) -%}
        {%- endif -%}
      {%- endfor -%}
      {%- if missing -%}
        {{ exceptions.raise_compiler_error(
            "target '" ~ target.name ~ "' (schema " ~ target.schema ~ "): the raw table(s) "
            ~ missing | join(', ') ~ " do not exist. Check that KAPPA_SHOP_SCHEMA names the "
            ~ "schema you ingested into (raw tables live in <schema>_raw) and that the target "
            ~ "reaches the right server; or load a log first: kappa-shop build --target "
            ~ target.name) }}
      {%- endif -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}
