{% macro _days_touched(queries) %}
    {#- The days `queries` (_touched_days) touch, sorted and distinct; for a running total
        (input_reach before: 'all'), every day from the first touched one through the table's
        last day (or the last touched one, if later). -#}
    {% set days_query %}
        select distinct cast(day as string) as day
        from ({{ queries | join(' union all ') }}) as touched
        order by day
    {% endset %}
    {% set days = run_query(days_query).columns[0].values() | list %}
    {% if kappa._input_reach(model).before == 'all' and days | length > 0 %}
        {#- every day from the first touched one through the table's last day (or the last
            touched one, if later) -#}
        {% set partition_column = kappa._partition_column(model) %}
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
    {{ return(days) }}
{% endmacro %}
