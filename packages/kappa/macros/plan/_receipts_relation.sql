{% macro _receipts_relation() %}
    {#- The ingestion receipts' relation: the dbt source the var `kappa_receipts` names
        ([source name, table name], by default [ingestion, batches]). Stops in one line naming
        the fix when the var is malformed, names no declared source, or the table does not
        exist (yet), instead of dbt's or Spark's error about a source or table it cannot find.
        Called once per invocation (_ingested_through): the one statement it sends, a listing of
        the receipts' name in their schema (a schema that does not exist is Spark's error
        naming it). -#}
    {% set named = var('kappa_receipts', ['ingestion', 'batches']) %}
    {% if named is string or named | length != 2 %}
        {% do exceptions.raise_compiler_error(
            "kappa: the var kappa_receipts names the ingestion receipts source, as [source name,"
            ~ " table name] (got " ~ named ~ "): set it in dbt_project.yml, for example vars:"
            ~ " {kappa_receipts: [shop_log, ingestion_batches]}, and declare that source (the"
            ~ " package README, 'Adopt it in your project')"
        ) %}
    {% endif %}
    {% set declared = graph.sources.values() | selectattr('source_name', 'equalto', named[0])
        | selectattr('name', 'equalto', named[1]) | list %}
    {% if declared | length == 0 %}
        {% do exceptions.raise_compiler_error(
            "kappa: the var kappa_receipts names the ingestion receipts source " ~ named[0] ~ "."
            ~ named[1] ~ (" (its default: the var is not set)" if var('kappa_receipts', none) is none
            else "") ~ ", which no sources YAML declares: declare it (sources: - name: " ~ named[0]
            ~ ", tables: - name: " ~ named[1] ~ "), or set kappa_receipts to the receipts"
            ~ " source you declared"
        ) %}
    {% endif %}
    {% set receipts = source(named[0], named[1]) %}
    {#- one listing of the receipts' name (not adapter.get_relation: it describes every table of
        a schema dbt does not cache, the raw schema) -#}
    {% set listed = run_query("show tables in " ~ receipts.schema ~ " like '" ~ receipts.identifier ~ "'") %}
    {% if listed.rows | length == 0 %}
        {% do exceptions.raise_compiler_error(
            "kappa: the ingestion receipts table " ~ receipts ~ " (source " ~ named[0] ~ "."
            ~ named[1] ~ ", var kappa_receipts) does not exist: your ingestion creates it"
            ~ " (ingestion_batch_id bigint, one row per batch, written after the batch's rows;"
            ~ " the package README has its DDL) before the first run"
        ) %}
    {% endif %}
    {{ return(receipts) }}
{% endmacro %}
