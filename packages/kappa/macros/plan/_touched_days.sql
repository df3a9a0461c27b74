{% macro _touched_days(first_batch_id) %}
    {#- For the current day-recomputing model, what its upstream rows changed since batch
        `first_batch_id` touch: {'queries': SQL queries of a column `day` each, 'parents': the
        day-recomputing parents whose ledger they read}. For an upstream model partitioned by
        ingestion batch, its rows in the batches this model has not consumed, by their
        event_time, widened by the model's input_reach; for an upstream day-recomputing model,
        the days it recomputed in runs that consumed those batches (from the ledger), widened
        likewise. A parent without event_time, or one that recomputes keys, stops the run with
        one line. -#}
    {% set reach = kappa._input_reach(model) %}
    {#- a running total (before: 'all'): a new event touches its own day, and then every later
        day (added below) -#}
    {% set reach_before = '0 minutes' if reach.before == 'all' else reach.before %}
    {% set touched_days = [] %}
    {% set day_parents = [] %}
    {% for parent in kappa._traced_parents(model, 'days') %}
        {% set relation = api.Relation.create(
            database=none, schema=parent.schema, identifier=parent.alias, type='table'
        ) %}
        {% set event_time = parent.config.get('event_time') %}
        {% if not event_time %}
            {% do exceptions.raise_compiler_error(
                model.name ~ " recomputes days from " ~ parent.name ~ ", which declares no event_time:"
                ~ " add config event_time='<timestamp column>' to " ~ parent.name ~ "."
            ) %}
        {% endif %}
        {% if kappa._contract_mode(parent) == 'batches' %}
            {% do touched_days.append(
                "select explode(sequence(to_date(" ~ event_time ~ " - interval " ~ reach.after
                ~ "), to_date(" ~ event_time ~ " + interval " ~ reach_before ~ "))) as day from "
                ~ relation ~ " where " ~ kappa._batch_column() ~ " >= " ~ first_batch_id
            ) %}
        {% elif kappa._contract_mode(parent) == 'keys' %}
            {% do exceptions.raise_compiler_error(
                model.name ~ " recomputes days but reads " ~ parent.name ~ ", which recomputes keys of "
                ~ parent.config.get('recompute_key') ~ ": a changed key cannot be traced to days."
                ~ " Read the staged model instead."
            ) %}
        {% else %}
            {% do day_parents.append(parent.alias) %}
            {# a parent day p holds rows with event_time in [p, p + 1 day) #}
            {% do touched_days.append(
                "select explode(sequence(to_date(cast(parent_day as timestamp) - interval "
                ~ reach.after ~ "), to_date(cast(parent_day as timestamp) + interval 1 day"
                ~ " - interval 1 microsecond + interval " ~ reach_before ~ "))) as day from"
                ~ " (select explode(recomputed_partitions) as parent_day from " ~ kappa._ledger_rows(this.schema)
                ~ " where model_name = '" ~ parent.alias ~ "' and last_batch_id >= " ~ first_batch_id ~ ")"
            ) %}
        {% endif %}
    {% endfor %}
    {{ return({'queries': touched_days, 'parents': day_parents}) }}
{% endmacro %}
