{#- On-run-start hook: a serving schema (one `kappa-shop build` or `reprocess` serves, with a
    registry of its versions, kappa_versions) holds views on the served version; its models
    are built in a version of it (models_schema). Stops, with one message naming the fix, a
    run that would build where it must not:
    - into the serving schema itself (var kappa_version null), where the models would replace
      the views readers query;
    - into the version this project's record says is served (kappa_version left out, as in a
      person's `dbt run`) when the registry serves another one: the record is behind (a
      reprocess or rollback run elsewhere), or missing.
    A version named by number (--vars 'kappa_version: 2') is built as asked. Renders no SQL. -#}
{% macro check_not_serving_schema() %}
  {%- if execute and flags.WHICH in ('run', 'build', 'seed', 'snapshot') -%}
    {%- set chosen = var('kappa_version', 'served') -%}
    {%- set building = models_schema() -%}
    {%- set raw_schema = var('raw_schema', target.schema ~ '_raw') -%}
    {%- set builds_models = [] -%}
    {%- for unique_id in selected_resources if unique_id in graph.nodes -%}
      {%- set node = graph.nodes[unique_id] -%}
      {%- if node.resource_type in ('model', 'seed', 'snapshot') and node.schema != raw_schema -%}
        {%- do builds_models.append(node.schema ~ '.' ~ node.alias) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if builds_models and (chosen is none or chosen == 'served') and adapter.get_relation(
          database=none, schema=target.schema, identifier='kappa_versions') is not none -%}
      {%- set served = run_query(
            "select max_by(version, struct(recorded_at, sequence)) as version from "
            ~ target.schema ~ ".kappa_versions where event = 'switched'").columns[0].values()[0] -%}
      {%- set served_schema = target.schema ~ "__v" ~ served -%}
      {%- if chosen is none -%}
        {{ exceptions.raise_compiler_error(
            target.schema ~ " is a serving schema: " ~ builds_models[0] ~ " and the other names "
            ~ "there are views on version " ~ served ~ " (" ~ served_schema ~ "), which this run "
            ~ "would replace. Leave kappa_version out of --vars to build the served version, or "
            ~ "name one: --vars 'kappa_version: " ~ served ~ "' (docs/reprocessing.md)") }}
      {%- elif building != served_schema -%}
        {{ exceptions.raise_compiler_error(
            target.schema ~ " serves version " ~ served ~ " (" ~ served_schema ~ "), but this "
            ~ "project's record of it says " ~ (building if building != target.schema else "none")
            ~ " (it is kept in .kappa_shop/ by kappa-shop): run `kappa-shop versions` here to "
            ~ "record it again, or name the version: --vars 'kappa_version: " ~ served
            ~ "' (docs/reprocessing.md)") }}
      {%- endif -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}
