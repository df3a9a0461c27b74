{% macro _compact_batch_ledger(schema_name) %}
    {#- On-run-end hook, after commit_consumed_batches: keep the batch ledger of `schema_name`
        from growing with every run. Each run adds one row per model, and every run reads the
        whole ledger (_ledger_ranges) and lists its partitions (the commit), so without this
        both would cost more with every run, for ever.

        A model with more rows than its limit (ledger_compact_limit: 11 to 20 with var
        `kappa_ledger_compact_after` at 20, by model, so that models are compacted in
        different runs) has its earlier rows merged into one row `compacted` covering batches
        1..L, where L is the last batch of
        the last row that no downstream model still needs: the models downstream of it read
        its rows of the batches after the ones they consumed (the days or buckets it
        recomputed, _recomputed_days and _recomputed_buckets), so only rows wholly before the
        least consumed of them may go. The model's latest row is always kept as it is (what
        its last run did). A compacted row records no partitions; nothing reads them again
        (a model built later starts from a full refresh).

        Two statements for the whole schema: the compacted rows are written (each replaces its
        model's row of batch 1), then the rows they cover are dropped. A run that dies between
        the two leaves rows inside a compacted row's range: _ledger_ranges leaves them out, so
        the consumed ranges stay one unbroken range, and the next compaction drops them.
        Renders no SQL. -#}
    {%- if execute and flags.WHICH in ('run', 'build') -%}
        {%- set ranges = kappa._ledger_ranges(schema_name) -%}
        {%- set crowded = [] -%}
        {%- for name in ranges.keys() | list | sort if ranges[name]['runs'] > kappa._ledger_compact_limit(name) -%}
            {%- do crowded.append(name) -%}
        {%- endfor -%}
        {%- if crowded | length > 0 -%}
            {#- the first batch each crowded model's downstream models still need from it -#}
            {%- set needed_from = {} -%}
            {%- for node in graph.nodes.values()
                if node.resource_type == 'model' and node.config.materialized == 'exact_incremental'
                and node.schema == schema_name and node.alias in ranges -%}
                {%- for dependency in node.depends_on.nodes -%}
                    {%- set parent = graph.nodes.get(dependency) -%}
                    {%- if parent is not none and parent.alias in crowded -%}
                        {%- set first_needed = ranges[node.alias]['last_batch_id'] + 1 -%}
                        {%- do needed_from.update({
                            parent.alias: [needed_from.get(parent.alias, first_needed), first_needed] | min
                        }) -%}
                    {%- endif -%}
                {%- endfor -%}
            {%- endfor -%}
            {%- set rows_query -%}
                select
                    model_name,
                    first_batch_id,
                    last_batch_id,
                    covered,
                    first_batch_id = max(first_batch_id) over (partition by model_name) as latest
                from {{ kappa._ledger_coverage(schema_name) }}
                where model_name in ('{{ crowded | join("', '") }}')
                order by model_name, first_batch_id
            {%- endset -%}
            {%- set rows = run_query(rows_query).rows -%}
            {%- set compacted = [] -%}
            {%- set dropped = [] -%}
            {%- for name in crowded -%}
                {%- set limit_batch = needed_from.get(name) -%}
                {%- set mergeable = [] -%}
                {%- for row in rows if row['model_name'] == name and not row['covered'] and not row['latest']
                    and (limit_batch is none or row['last_batch_id'] < limit_batch) -%}
                    {%- do mergeable.append(row) -%}
                {%- endfor -%}
                {%- set leftovers = [] -%}
                {%- for row in rows if row['model_name'] == name and row['covered'] -%}
                    {%- do leftovers.append(row) -%}
                {%- endfor -%}
                {#- the mergeable rows are the start of the model's unbroken range (1..L) -#}
                {%- set through = (mergeable | map(attribute='last_batch_id') | max) if mergeable else 0 -%}
                {%- set length = mergeable | map(attribute='last_batch_id') | sum
                    - mergeable | map(attribute='first_batch_id') | sum + mergeable | length -%}
                {%- if mergeable | length > 1 and mergeable[0]['first_batch_id'] == 1 and length == through -%}
                    {%- do compacted.append({
                        'model_name': name, 'first_batch_id': 1, 'last_batch_id': through,
                        'refresh_mode': 'compacted', 'recomputed_partitions': none,
                    }) -%}
                    {%- for row in mergeable[1:] -%}
                        {%- do dropped.append((name, row['first_batch_id'])) -%}
                    {%- endfor -%}
                    {%- do ranges[name].update({'runs': ranges[name]['runs'] - mergeable | length + 1}) -%}
                    {{ log("Compacting the ledger of " ~ schema_name ~ "." ~ name ~ ": its " ~ mergeable | length
                        ~ " runs through batch " ~ through ~ " into one row") }}
                {%- endif -%}
                {%- for row in leftovers -%}
                    {%- do dropped.append((name, row['first_batch_id'])) -%}
                {%- endfor -%}
            {%- endfor -%}
            {%- if compacted | length > 0 -%}
                {%- do kappa._write_ledger_rows('compact_batch_ledger', schema_name, compacted) -%}
            {%- endif -%}
            {%- if dropped | length > 0 -%}
                {%- call statement('drop_compacted_rows') -%}
                    alter table {{ kappa._batch_ledger(schema_name) }} drop if exists
                    {% for name, first_batch_id in dropped -%}
                    partition (model_name = '{{ name }}', first_batch_id = {{ first_batch_id }}){{ ", " if not loop.last }}
                    {% endfor %}
                {%- endcall -%}
                {{ log("Compacted the batch ledger of " ~ schema_name ~ ": " ~ compacted | length
                    ~ " model(s), " ~ dropped | length ~ " row(s) dropped", info=true) }}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
