{% macro _available_through(node) %}
    {#- The last ingestion batch whose effects `node`'s inputs already hold: the log's last
        batch for a model that reads sources, and no further than what each upstream
        exact_incremental model has consumed. A model never runs ahead of its inputs. -#}
    {% set marks = [] %}
    {% set reads_log = namespace(value=false) %}
    {% for dependency in node.depends_on.nodes %}
        {% if dependency.startswith('source.') %}
            {% set reads_log.value = true %}
        {% elif dependency in graph.nodes
            and graph.nodes[dependency].config.materialized == 'exact_incremental' %}
            {% set upstream = graph.nodes[dependency] %}
            {% set upstream_relation = api.Relation.create(
                database=none, schema=upstream.schema, identifier=upstream.alias, type='table'
            ) %}
            {% do marks.append(kappa.consumed_through(upstream_relation)) %}
        {% endif %}
    {% endfor %}
    {% if reads_log.value or marks | length == 0 %}
        {% do marks.append(kappa._ingested_through()) %}
    {% endif %}
    {{ return(marks | min) }}
{% endmacro %}
