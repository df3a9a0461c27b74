{% macro _recomputed_days() %}
    {#- The UTC days of the current day-recomputing model that this run must recompute: a sorted
        list of 'YYYY-MM-DD' strings, or none for every day (a full refresh, a first build, or
        an upstream day-recomputing model that was itself rebuilt in full).

        A day is touched when an upstream row that changed since the model's last run can reach
        it (see input_reach): for an upstream model partitioned by ingestion batch, its rows in
        the batches this model has not consumed, by their event_time; for an upstream
        day-recomputing model, the days it recomputed in runs that consumed those batches (from
        the ledger). A running total (input_reach before: 'all') recomputes every day from the
        first touched one through its table's last. Seeds (reference data) are not traced:
        changing one needs a full refresh of what reads it. The var `kappa_recompute_days` pins
        the list (unit tests). -#}
    {% if var('kappa_recompute_days', none) is not none %}
        {{ return(var('kappa_recompute_days') | list) }}
    {% endif %}
    {% if not execute or not kappa.is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {#- worked out once per model and invocation (_run_state): its SQL and its materialization
        must agree, and the ledger is read once -#}
    {% set memo = kappa._run_state()['planned_partitions'] %}
    {% if model.unique_id in memo %}
        {{ return(memo[model.unique_id]) }}
    {% endif %}
    {% set first_batch_id = kappa.consumed_through(this) + 1 %}
    {% if kappa._nothing_new_to_recompute(first_batch_id) %}
        {% do memo.update({model.unique_id: []}) %}
        {{ return([]) }}
    {% endif %}
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
    {% if kappa._rebuilt_since(day_parents, first_batch_id) %}
        {% do memo.update({model.unique_id: none}) %}
        {{ return(none) }}
    {% endif %}
    {% if touched_days | length == 0 %}
        {% do memo.update({model.unique_id: []}) %}
        {{ return([]) }}
    {% endif %}
    {% set days_query %}
        select distinct cast(day as string) as day
        from ({{ touched_days | join(' union all ') }}) as touched
        order by day
    {% endset %}
    {% set days = run_query(days_query).columns[0].values() | list %}
    {% if reach.before == 'all' and days | length > 0 %}
        {#- every day from the first touched one through the table's last day (or the last
            touched one, if later) -#}
        {% set partition_column = model.config.get('partition_by') if model.config.get('partition_by') is string
            else model.config.get('partition_by')[0] %}
        {% set last_query %}
            select cast(max({{ partition_column }}) as string) as last_day from {{ this }}
        {% endset %}
        {% set last_day = run_query(last_query).columns[0].values()[0] %}
        {% set first = modules.datetime.date.fromisoformat(days[0]) %}
        {% set last = modules.datetime.date.fromisoformat([days[-1], last_day or days[-1]] | max) %}
        {% set days = [] %}
        {% for offset in range((last - first).days + 1) %}
            {% do days.append((first + modules.datetime.timedelta(days=offset)).isoformat()) %}
        {% endfor %}
    {% endif %}
    {% do memo.update({model.unique_id: days}) %}
    {{ return(days) }}
{% endmacro %}
