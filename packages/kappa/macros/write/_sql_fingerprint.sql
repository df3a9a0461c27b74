{% macro _sql_fingerprint() %}
    {#- The current model's compiled SQL as an md5 hash, without what the contract's predicates
        render for this run alone (_run_specific: batch ranges, days, key buckets): two runs of
        an unchanged model, with the same macros and vars, have the same fingerprint, so the
        same columns. Recorded in the ledger with each run that writes (_record_consumed_batches);
        a later run with nothing to write whose fingerprint is the same skips the column check
        (exact_incremental). -#}
    {%- set shape = modules.re.sub(
        '/\\* kappa: run-specific \\*/.*?/\\* kappa: end \\*/', '', compiled_code, flags=modules.re.DOTALL
    ) -%}
    {{ return(local_md5(shape)) }}
{% endmacro %}
