{% macro _day_runs(days) %}
    {#- The runs of consecutive days in a sorted list of 'YYYY-MM-DD' strings: a list of
        [first, last] pairs of dates (datetime.date), first == last for a day alone. What a
        day predicate filters by (one range of event times per run, in_recomputed_days) and
        how a run's summary names the days it recomputed (_write_recomputed). -#}
    {%- set runs = [] -%}
    {%- for day in days -%}
        {%- set this_day = modules.datetime.date.fromisoformat(day) -%}
        {%- if runs | length > 0 and (this_day - runs[-1][-1]).days == 1 -%}
            {%- do runs[-1].pop() -%}
            {%- do runs[-1].append(this_day) -%}
        {%- else -%}
            {%- do runs.append([this_day, this_day]) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(runs) }}
{% endmacro %}
