{% macro before_new_batches(batch_column) %}
    {#- The complement of in_new_batches(): rows of batches the model has already consumed
        (none on a full refresh). For looking up history that new rows must be compared with,
        such as earlier deliveries of the same event. -#}
    {{- kappa._require_mode('before_new_batches', 'batches') -}}
    {%- call kappa._run_specific() %}
        {{ batch_column }} < {{ kappa._first_new_batch() }}
    {%- endcall %}
{%- endmacro %}
