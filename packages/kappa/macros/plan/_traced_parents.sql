{% macro _traced_parents(node, recomputes) %}
    {#- The upstream models whose changes a recomputing model traces to its partitions: its
        exact_incremental parents. Seeds (reference data) are left out: changing one needs a
        full refresh of what reads it. A parent that is a source, or a model of another
        materialization, is an error: neither records what changed. `recomputes` names what the
        model recomputes ('days' or 'keys'), for the message. -#}
    {% set parents = [] %}
    {% for dependency in node.depends_on.nodes %}
        {% set parent = graph.nodes.get(dependency) %}
        {% if dependency.startswith('source.') or parent is none %}
            {% do exceptions.raise_compiler_error(
                node.name ~ " recomputes " ~ recomputes ~ " but reads " ~ dependency ~ " directly; read the"
                ~ " staged model of that source instead (only staging reads sources)."
            ) %}
        {% elif parent.resource_type == 'seed' %}
            {# reference data: not traced (documented) #}
        {% elif parent.config.materialized != 'exact_incremental' %}
            {% do exceptions.raise_compiler_error(
                node.name ~ " recomputes " ~ recomputes ~ " but reads " ~ parent.name ~ ", which is materialized"
                ~ " as '" ~ parent.config.materialized ~ "': only exact_incremental models record what changed."
            ) %}
        {% else %}
            {% do parents.append(parent) %}
        {% endif %}
    {% endfor %}
    {{ return(parents) }}
{% endmacro %}
