{% macro in_recomputed_days(time_column, before=none, after=none, parent=none) %}
    {#- A SQL predicate on an input's event-time column that keeps exactly the input a
        day-recomputing model needs for the days this run recomputes: for each run of
        consecutive recomputed days [first, last], event times in
        [first - before, last + 1 day + after). `before` and `after` default to the model's
        input_reach. `true` when every day is recomputed, `false` when none is. A running total
        (before: 'all') reads here only the recomputed days' own events (before = 0) and what
        lies before them through before_recomputed_days.

        `parent` names the input when it is itself a day-recomputing model and `time_column` is
        its event_time: its table is partitioned by the UTC day of that column, so the predicate
        also names the partitions those times lie in, and Spark reads only them (on the event
        time alone it opens every day's files of the table, a cost that grows with history). -#}
    {{- kappa._require_mode('in_recomputed_days', 'days') -}}
    {%- call kappa._run_specific() %}
        {% set days = kappa._recomputed_days() %}
        {% if days is none %}
            true
        {%- elif days | length == 0 %}
            false
        {%- else %}
            {%- set reach = kappa._input_reach(model) %}
            {%- set before = before if before is not none else ('0 minutes' if reach.before == 'all' else reach.before) %}
            {%- set after = after if after is not none else reach.after %}
            {%- set partition_column = none %}
            {%- if parent is not none %}
                {%- set partition_column = kappa._day_partition_column(parent, time_column) %}
            {%- endif %}
            {%- set ranges = kappa._day_runs(days) %}
            (
            {%- for days_in_range in ranges %}
                ({{ time_column }} >= timestamp '{{ days_in_range[0] }}' - interval {{ before }}
                and {{ time_column }} < timestamp '{{ days_in_range[-1] }}' + interval 1 day + interval {{ after }}
                {%- if partition_column is not none %}
                and {{ partition_column }} >= to_date(timestamp '{{ days_in_range[0] }}' - interval {{ before }})
                and {{ partition_column }} <= to_date(timestamp '{{ days_in_range[-1] }}' + interval 1 day + interval {{ after }} - interval 1 microsecond)
                {%- endif %})
                {{- " or" if not loop.last }}
            {%- endfor %}
            )
        {%- endif %}
    {%- endcall %}
{%- endmacro %}
