{% macro on_run_end() %}
    {#- The contract's bookkeeping after a run, as one on-run-end hook
        (`on-run-end: ["{{ kappa.on_run_end() }}"]` in dbt_project.yml): the incremental ranges
        of the run's models are committed to the ledger in one write, a model's older ledger
        rows are merged when it has many, then the run lock is released; last, a line per model
        that recomputed days or key buckets says which, and the rows it wrote
        (_report_recomputed). Renders no SQL. -#}
    {%- if execute -%}
        {%- do kappa._commit_consumed_batches() -%}
        {%- for schema_name in kappa._contract_schemas() -%}
            {%- do kappa._compact_batch_ledger(schema_name) -%}
        {%- endfor -%}
        {%- do kappa.release_run_lock() -%}
        {%- do kappa._report_recomputed() -%}
    {%- endif -%}
{% endmacro %}
