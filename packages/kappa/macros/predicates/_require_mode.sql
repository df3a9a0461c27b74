{% macro _require_mode(predicate, mode) %}
    {#- Stops compilation, in one line naming the model and the fix, when a predicate is called
        in an exact_incremental model of another mode (or one whose partitioning names no mode:
        _contract_mode's error), so that `dbt compile` refuses what `dbt run` would: a day
        model without event_time, a key model's predicate in a day model. Renders nothing. -#}
    {%- set predicates = {
        'batches': 'kappa.in_new_batches() or kappa.before_new_batches()',
        'days': 'kappa.in_recomputed_days(), kappa.before_recomputed_days() or kappa.is_recomputed_day()',
        'keys': 'kappa.in_recomputed_buckets()',
    } -%}
    {%- set kinds = {
        'batches': 'a model partitioned by ' ~ kappa._batch_column() ~ ' first (batches mode)',
        'days': 'a model partitioned by the UTC day of its event_time (days mode)',
        'keys': 'a model partitioned by kappa.key_bucket() of its recompute_key (keys mode)',
    } -%}
    {%- if execute and model.config.get('materialized') == 'exact_incremental' -%}
        {%- set found = kappa._contract_mode(model) -%}
        {%- if found != mode -%}
            {%- do exceptions.raise_compiler_error(
                model.name ~ ": kappa." ~ predicate ~ "() is for " ~ kinds[mode] ~ ", and this is "
                ~ kinds[found] ~ ": filter its input with " ~ predicates[found]
            ) -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
