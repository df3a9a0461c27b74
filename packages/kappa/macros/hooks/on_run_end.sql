{% macro on_run_end() %}
    {#- The contract's bookkeeping after a run, as one on-run-end hook
        (`on-run-end: ["{{ kappa.on_run_end() }}"]` in dbt_project.yml): the incremental ranges
        of the run's models are committed to the ledger in one write, a model's older ledger
        rows are merged when it has many, then the run lock is released; last, a line per model
        that recomputed days or key buckets says which (_report_recomputed). Renders no SQL. -#}
    {%- if execute -%}
        {%- do kappa._commit_consumed_batches() -%}
        {%- do kappa._compact_batch_ledger() -%}
        {%- do kappa.release_run_lock() -%}
        {%- do kappa._report_recomputed() -%}
    {%- endif -%}
{% endmacro %}

{% macro _report_recomputed() %}
    {#- At the end of a run, after its ranges are committed: one line per model that recomputed
        days or key buckets, saying which (from the incremental runs of this invocation; a
        full refresh rebuilds everything and says so in dbt's own log). What a run costs
        follows what it recomputes, so this is where a user sees why a run took long. -#}
    {%- set recomputed = kappa._run_state()['recomputed'] -%}
    {%- for line in recomputed | sort -%}
        {{ log("kappa: " ~ line, info=true) }}
    {%- endfor -%}
    {%- do recomputed.clear() -%}
{% endmacro %}
