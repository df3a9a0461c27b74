{% macro _report_recomputed() %}
    {#- At the end of a run, after its ranges are committed: one line per model that recomputed
        days or key buckets, saying which and how many rows those partitions now hold (from
        the incremental runs of this invocation; a full refresh rebuilds everything and says
        so in dbt's own log). What a run costs follows what it recomputes, so this is where a
        user sees why a run took long. The rows are counted in one statement for the whole run
        (about 0.9 s with its fetch in the package's tests), after the lock is released: a
        failing count cannot keep the lock. -#}
    {%- set recomputed = kappa._run_state()['recomputed'] -%}
    {%- if recomputed | length > 0 -%}
        {%- set counts -%}
            {%- for entry in recomputed %}
            select {{ loop.index0 }} as entry, written from ({{ entry['rows'] }}) as counted
            {%- if not loop.last %} union all{% endif %}
            {%- endfor %}
        {%- endset -%}
        {%- set written = {} -%}
        {%- for row in run_query(counts) -%}
            {%- do written.update({row[0] | int: row[1] | int}) -%}
        {%- endfor -%}
        {%- set lines = [] -%}
        {%- for entry in recomputed -%}
            {%- do lines.append(entry['line'] ~ ": " ~ '{:,}'.format(written[loop.index0]) ~ " row(s) written") -%}
        {%- endfor -%}
        {%- for line in lines | sort -%}
            {{ log("kappa: " ~ line, info=true) }}
        {%- endfor -%}
    {%- endif -%}
    {%- do recomputed.clear() -%}
{% endmacro %}
