{% macro _input_reach(node) %}
    {#- How far outside its own UTC day the inputs of one day of a day-recomputing model reach,
        from the model's config `input_reach: {before: <interval>, after: <interval>}` (Spark
        interval literals such as '1 hour' or '4 minutes'; both default to '0 minutes').
        Day D of the model is computed from input events with event time in
        [D - before, D + 1 day + after): a rolling one-hour count reaches one hour before its
        day; a five-minute hopping window that starts on D ends up to four minutes after it.
        `before: 'all'` is a running total (a level as the sum of every change up to it): every
        earlier event counts, so a new event changes its own day and every later one, and the
        model reads what lies before the days it recomputes as one sum
        (before_recomputed_days). In a unit test, the var `kappa_input_reach` stands in for the
        config. -#}
    {#- a unit test has no graph to find its model's config in: it pins the reach with the
        var kappa_input_reach (the proof checks each model's configured reach end to end) -#}
    {% if node.resource_type == 'unit_test' %}
        {% set reach = var('kappa_input_reach', {}) %}
    {% else %}
        {% set reach = node.config.get('input_reach') or {} %}
    {% endif %}
    {% for key in reach %}
        {% if key not in ('before', 'after') %}
            {% do exceptions.raise_compiler_error(
                node.name ~ ": input_reach takes 'before' and 'after' (Spark intervals); got '" ~ key ~ "'"
            ) %}
        {% endif %}
        {% if key == 'after' and reach[key] == 'all' %}
            {% do exceptions.raise_compiler_error(
                node.name ~ ": input_reach after: 'all' is not supported (only before: 'all', a running total)"
            ) %}
        {% endif %}
    {% endfor %}
    {{ return({
        'before': reach.get('before', '0 minutes'),
        'after': reach.get('after', '0 minutes'),
    }) }}
{% endmacro %}
