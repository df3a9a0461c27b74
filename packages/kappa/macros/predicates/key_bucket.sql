{% macro key_bucket(key_column) %}
    {#- The bucket of a key, 0 .. var('kappa_key_buckets', 16) - 1: the partition of a
        key-recomputing model that holds the key's rows. A deterministic hash (xxhash64), the
        same on every run and engine version, so a key never changes bucket. -#}
    pmod(xxhash64({{ key_column }}), {{ var('kappa_key_buckets', 16) }})
{%- endmacro %}
