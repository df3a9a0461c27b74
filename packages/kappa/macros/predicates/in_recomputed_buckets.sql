{% macro in_recomputed_buckets(key_column) %}
    {#- A SQL predicate on an input's key column that keeps exactly the input a key-recomputing
        model needs for the buckets this run recomputes: every row, of any time, whose key falls
        in one of them. `true` when every bucket is recomputed, `false` when none is. -#}
    {{- kappa._require_mode('in_recomputed_buckets', 'keys') -}}
    {%- call kappa._run_specific() %}
        {% set buckets = kappa._recomputed_buckets() %}
        {% if buckets is none %}
            true
        {%- elif buckets | length == 0 %}
            false
        {%- else %}
            {{ kappa.key_bucket(key_column) }} in ({{ buckets | join(', ') }})
        {%- endif %}
    {%- endcall %}
{%- endmacro %}
