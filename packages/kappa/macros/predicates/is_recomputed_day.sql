{% macro is_recomputed_day(date_column) %}
    {#- A SQL predicate on a day-recomputing model's own day column: true for the rows of the days
        this run recomputes (every row on a full refresh). Models whose inputs reach past their
        day (input_reach) compute partial rows for the neighbouring days; this keeps them out.
        The materialization applies the same filter to whatever the model returns. -#}
    {{- kappa._require_mode('is_recomputed_day', 'days') -}}
    {%- call kappa._run_specific() %}
        {% set days = kappa._recomputed_days() %}
        {% if days is none %}
            true
        {%- elif days | length == 0 %}
            false
        {%- else %}
            {{ date_column }} in ({% for day in days %}date '{{ day }}'{{ ", " if not loop.last }}{% endfor %})
        {%- endif %}
    {%- endcall %}
{%- endmacro %}
