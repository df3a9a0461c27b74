{% macro _recomputed_buckets() %}
    {#- The key buckets of the current key-recomputing model that this run must recompute: a
        sorted list of bucket numbers (as strings), or none for every bucket (a full refresh, a
        first build, or an upstream key model that was itself rebuilt in full). A bucket is
        touched when an upstream row that changed since the model's last run carries a key of
        it (_touched_buckets). Seeds are not traced. The var `kappa_recompute_buckets` pins the
        list (unit tests). -#}
    {{ return(kappa._recomputed_partitions('keys')) }}
{% endmacro %}
