{% macro before_recomputed_days(time_column) %}
    {#- For a running total (input_reach before: 'all'): a SQL predicate on an input's event-time
        column that keeps the input before the first day this run recomputes, which the model
        sums up per key as the opening value of those days (a product's level at midnight of
        the first day). The recomputed days are always every day from the first through the
        table's last, so nothing between them is left out. `false` when every day is
        recomputed (a full refresh sums from the beginning) and when none is. -#}
    {{- kappa._require_mode('before_recomputed_days', 'days') -}}
    {%- call kappa._run_specific() %}
        {% set days = kappa._recomputed_days() %}
        {% if days is none or days | length == 0 %}
            false
        {%- else %}
            {{ time_column }} < timestamp '{{ days[0] }}'
        {%- endif %}
    {%- endcall %}
{%- endmacro %}
