{% macro _check_receipt_counts(last_batch_id) %}
    {#- With the var `kappa_receipts_record_count` ({column: <receipts column>, sources:
        [[source name, table name], ...]}), check that each receipt a run may read counts the
        rows its batch holds in those sources. A receipt is the promise that its batch is
        complete: one written before all of its rows lets a run consume part of a batch, and
        the rows after it are never read again by an incremental run (a full refresh reads
        them: the two part). The check stops the run in one line naming the batch, both counts
        and the fix, before any model consumed anything: like a gap in the receipts, it fails
        each model that reads the log, and the models downstream are skipped.

        Checked: the receipts through `last_batch_id` after the least any selected model of
        the contract's schemas has consumed (every batch while a model has consumed none, and
        on a full refresh), so a run counts what it may read, not the whole log. Called by
        _ingested_through in a `run` or `build`, once per invocation (a refusal is kept and
        said again to the next model without a statement); none without the var. -#}
    {%- set counted = var('kappa_receipts_record_count', none) -%}
    {%- if counted is none or flags.WHICH not in ('run', 'build') -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set shaped = counted is mapping and counted.get('column') is string
        and counted.get('sources') is sequence and counted.get('sources') is not string
        and counted.get('sources') | length > 0 -%}
    {%- set malformed = [] -%}
    {%- if shaped -%}
        {%- for named in counted['sources'] if named is string or named | length != 2 -%}
            {%- do malformed.append(named) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if not shaped or malformed | length > 0 -%}
        {%- do exceptions.raise_compiler_error(
            "kappa: the var kappa_receipts_record_count names the receipts' count column and the"
            ~ " sources it counts, as {column: record_count, sources: [[shop_log, orders]]} (got "
            ~ counted ~ "): set it so in dbt_project.yml, or leave it out"
        ) -%}
    {%- endif -%}
    {%- set state = kappa._run_state() -%}
    {%- if state.get('receipts_refusal') -%}
        {%- do exceptions.raise_compiler_error(state['receipts_refusal']) -%}
    {%- endif -%}
    {%- set schemas = kappa._contract_schemas() -%}
    {#- the least batch a selected model of these schemas has consumed through (0: none yet) -#}
    {%- set selected = selected_resources if selected_resources is defined else none -%}
    {%- set consumed = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.materialized == 'exact_incremental'
        and node.schema in schemas and (selected is none or node.unique_id in selected) -%}
        {%- do consumed.append(kappa._ledger_ranges(node.schema).get(node.alias, {}).get('last_batch_id', 0)) -%}
    {%- endfor -%}
    {%- set from_batch = [0 if flags.FULL_REFRESH else (consumed | min if consumed else last_batch_id), 0] | max -%}
    {%- if from_batch >= last_batch_id -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set batch = kappa._batch_column() -%}
    {%- set tables = [] -%}
    {%- for named in counted['sources'] -%}
        {%- do tables.append(source(named[0], named[1])) -%}
    {%- endfor -%}
    {%- set receipts = kappa._receipts_relation() -%}
    {%- set query -%}
        with

        receipted as (
            select ingestion_batch_id, {{ counted['column'] }} as record_count
            from {{ receipts }}
            where ingestion_batch_id > {{ from_batch }} and ingestion_batch_id <= {{ last_batch_id }}
        ),

        written as (
            select batch_id, count(*) as rows_written
            from (
                {%- for table in tables %}
                select {{ batch }} as batch_id from {{ table }}
                where {{ batch }} > {{ from_batch }} and {{ batch }} <= {{ last_batch_id }}
                {{- "\n                union all" if not loop.last }}
                {%- endfor %}
            ) as rows_of_batches
            group by batch_id
        )

        select
            receipted.ingestion_batch_id,
            receipted.record_count,
            coalesce(written.rows_written, 0) as rows_written
        from receipted
        left join written on receipted.ingestion_batch_id = written.batch_id
        where receipted.record_count is null or receipted.record_count != coalesce(written.rows_written, 0)
        order by receipted.ingestion_batch_id
        limit 1
    {%- endset -%}
    {%- set found = run_query(query).rows -%}
    {%- if found | length > 0 -%}
        {%- set row = found[0] -%}
        {%- set where = receipts ~ " (" ~ counted['column'] ~ ")" -%}
        {%- set holding = tables | join(', ') ~ " hold" ~ ("s" if tables | length == 1 else "")
            ~ " " ~ row['rows_written'] ~ " row(s) of batch " ~ row['ingestion_batch_id'] -%}
        {%- if row['record_count'] is none -%}
            {%- set said = "the receipt of ingestion batch " ~ row['ingestion_batch_id'] ~ " in "
                ~ where ~ " has no count: write each receipt with the number of rows its batch"
                ~ " wrote into " ~ tables | join(', ') -%}
        {%- elif row['record_count'] > row['rows_written'] -%}
            {%- set said = "the receipt of ingestion batch " ~ row['ingestion_batch_id'] ~ " in "
                ~ where ~ " counts " ~ row['record_count'] ~ " rows, and " ~ holding ~ ": the"
                ~ " receipt was written before all of its batch's rows. Write a batch's receipt"
                ~ " only after its rows; no model consumed a batch, and a run after the rows are"
                ~ " all written takes it (a scheduler can treat this error as 'not yet')" -%}
        {%- else -%}
            {%- set said = "the receipt of ingestion batch " ~ row['ingestion_batch_id'] ~ " in "
                ~ where ~ " counts " ~ row['record_count'] ~ " rows, and " ~ holding ~ ": rows"
                ~ " were added to the batch after its receipt, or the receipts count other tables"
                ~ " than the var kappa_receipts_record_count names. Write a batch's rows once,"
                ~ " then its receipt (a new delivery is a new batch); no model consumed a batch" -%}
        {%- endif -%}
        {%- do state.update({'receipts_refusal': "kappa: " ~ said}) -%}
        {%- do exceptions.raise_compiler_error("kappa: " ~ said) -%}
    {%- endif -%}
{% endmacro %}
