{% macro _run_specific() %}
    {#- Wraps what a predicate renders (its `call` block) between two comments,
        `/* kappa: run-specific */ ... /* kappa: end */`: SQL that changes from run to run while
        the model stays the same (batch ranges, days, key buckets), which _sql_fingerprint
        leaves out. -#}
    /* kappa: run-specific */ {{ caller() | trim }} /* kappa: end */
{%- endmacro %}
