{% macro _day_partition_column(parent_name, time_column) %}
    {#- The day column that the current model's parent `parent_name` is partitioned by, for
        in_recomputed_days to name the partitions that times of `time_column` lie in. The
        parent must be one of the model's day-recomputing parents (partitioned by the UTC day
        of its event_time) and `time_column` its event_time; anything else is an error naming
        the model, since a wrong column would read the wrong partitions. A unit test has no
        graph to look the parent up in: there it is none (no partition predicate; the proof
        runs every model's predicate end to end). -#}
    {% if model.resource_type == 'unit_test' %}
        {{ return(none) }}
    {% endif %}
    {% for parent in kappa._traced_parents(model, 'days') if parent.name == parent_name %}
        {% if kappa._contract_mode(parent) != 'days' %}
            {% do exceptions.raise_compiler_error(
                model.name ~ " names " ~ parent_name ~ " as the parent of kappa.in_recomputed_days('"
                ~ time_column ~ "'), but " ~ parent_name ~ " is not partitioned by day: leave out parent="
            ) %}
        {% endif %}
        {% if parent.config.get('event_time') != time_column %}
            {% do exceptions.raise_compiler_error(
                model.name ~ " filters " ~ parent_name ~ " on " ~ time_column ~ ", but its days are those"
                ~ " of its event_time " ~ parent.config.get('event_time') ~ ": filter on "
                ~ parent.config.get('event_time') ~ ", or leave out parent="
            ) %}
        {% endif %}
        {{ return(kappa._partition_column(parent)) }}
    {% endfor %}
    {% do exceptions.raise_compiler_error(
        model.name ~ " names " ~ parent_name ~ " as the parent of kappa.in_recomputed_days('" ~ time_column
        ~ "'), but does not read it (ref) as an exact_incremental model"
    ) %}
{% endmacro %}
