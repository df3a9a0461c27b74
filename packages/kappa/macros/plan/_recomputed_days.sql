{% macro _recomputed_days() %}
    {#- The UTC days of the current day-recomputing model that this run must recompute: a sorted
        list of 'YYYY-MM-DD' strings, or none for every day (a full refresh, a first build, or
        an upstream day-recomputing model that was itself rebuilt in full). A day is touched
        when an upstream row that changed since the model's last run can reach it (see
        input_reach; _touched_days); a running total (input_reach before: 'all') recomputes
        every day from the first touched one through its table's last (_days_touched). Seeds
        (reference data) are not traced: changing one needs a full refresh of what reads it.
        The var `kappa_recompute_days` pins the list (unit tests). -#}
    {{ return(kappa._recomputed_partitions('days')) }}
{% endmacro %}
