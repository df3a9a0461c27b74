{% macro _ledger_compact_limit(model_name) %}
    {#- How many ledger rows `model_name` may have before _compact_batch_ledger merges them: a
        number between half of var `kappa_ledger_compact_after` (rounded down) plus one and
        the var itself, fixed per model by a hash of its name (md5). Every model gains one row a
        run, all from the same full refresh, so one limit for all would have them all
        compacted in the same run (about 665 partition drops at 35 models, 15-35 s, one run in
        nineteen); spread over ten limits, a few models are compacted in a run, and their
        different periods keep them apart. With a var of 1 or 2, every model gets the var. -#}
    {%- set limit = var('kappa_ledger_compact_after', 20) | int -%}
    {%- set spread = (limit + 1) // 2 -%}
    {{- return(limit - (local_md5(model_name)[:8] | int(base=16)) % spread) -}}
{% endmacro %}
