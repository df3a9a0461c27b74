{% macro _write_recomputed(existing_relation, partitions, table_columns, mode, first_batch_id, last_batch_id) %}
    {#- A days or keys model's run: the days or key buckets its new batches reach (`partitions`,
        from the plan) replaced whole (_write_partitions), and noted for the line the run ends
        with, which says which and the rows they then hold (_report_recomputed). -#}
    {%- set written = kappa._write_partitions(existing_relation, partitions, table_columns) -%}
    {%- set day_runs = [] -%}
    {%- for first, last in (kappa._day_runs(partitions) if mode == 'days' else []) -%}
        {%- do day_runs.append(first ~ (".." ~ last if last != first else "")) -%}
    {%- endfor -%}
    {%- set recomputed = model.name ~ ": ingestion batches " ~ first_batch_id ~ ".." ~ last_batch_id ~ " recomputed "
        ~ (partitions | length ~ " day(s), " ~ day_runs | join(", ") if mode == 'days'
           else partitions | length ~ " of " ~ var('kappa_key_buckets', 16) ~ " key bucket(s)") -%}
    {{ log(recomputed) }}
    {%- do kappa._run_state()['recomputed'].append({
        'line': this.schema ~ "." ~ recomputed,
        'rows': "select count(*) as written from " ~ this ~ " where " ~ written,
    }) -%}
{% endmacro %}
