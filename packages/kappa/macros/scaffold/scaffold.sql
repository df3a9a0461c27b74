{% macro scaffold(table, columns, key, event_time, schema='shop_log', receipts='ingestion_batches') %}
    {#- Prints the start of an adoption for one stream of the log (the package README, "Adopt
        it in your project"): the raw table's and the receipts table's DDL, the sources YAML
        declaring both, and a staging model that takes each ingestion batch once and keeps
        each `key` once, from its first delivery. Each block begins with the path it belongs
        in. Writes nothing and needs no connection:

            dbt run-operation kappa.scaffold --args '{table: orders, key: order_id,
              event_time: placed_at, columns: {order_id: string, customer_id: string,
              amount: double, placed_at: timestamp}}' -#}
    {%- set batch = kappa._batch_column() -%}
    {%- set names = columns.keys() | list -%}
    {%- if key not in names or event_time not in names -%}
        {%- do exceptions.raise_compiler_error(
            "kappa.scaffold: key (" ~ key ~ ") and event_time (" ~ event_time ~ ") must be among"
            ~ " the columns (" ~ names | join(', ') ~ ")"
        ) -%}
    {%- endif -%}
    {%- set column_lines = [] -%}
    {%- for name, type in columns.items() -%}
        {%- do column_lines.append("    " ~ name ~ " " ~ type ~ ",") -%}
    {%- endfor -%}
    {%- set ddl -%}
-- ingestion/raw_tables.sql
create schema if not exists {{ schema }};

create table if not exists {{ schema }}.{{ table }} (
{{ column_lines | join('\n') }}
    {{ batch }} bigint
) using parquet partitioned by ({{ batch }});

create table if not exists {{ schema }}.{{ receipts }} (ingestion_batch_id bigint, record_count bigint) using parquet;
    {%- endset -%}
    {%- set sources -%}
# models/_sources.yml
version: 2
sources:
  - name: {{ schema }}
    schema: {{ schema }}
    tables:
      - name: {{ table }}
        description: Every delivered record of {{ table }}, by ingestion batch.
      - name: {{ receipts }}
        description: One receipt per ingestion batch, written after its rows.
    {%- endset -%}
    {%- set ordering = [batch, event_time] + (names | reject('in', [key, event_time]) | list) -%}
    {%- set staging -%}
-- models/stg_{{ table }}.sql
{{ "{{ config(partition_by=['" ~ batch ~ "'], event_time='" ~ event_time ~ "') }}" }}

with

new_deliveries as (
    select
        {{ (names + [batch]) | join(', ') }},
        row_number() over (
            partition by {{ key }} order by {{ ordering | join(', ') }}
        ) as delivery
    from {{ "{{ source('" ~ schema ~ "', '" ~ table ~ "') }}" }}
    where {{ "{{ kappa.in_new_batches('" ~ batch ~ "') }}" }}
),

delivered_before as (
    select distinct {{ key }}
    from {{ "{{ source('" ~ schema ~ "', '" ~ table ~ "') }}" }}
    where {{ "{{ kappa.before_new_batches('" ~ batch ~ "') }}" }}
)

select {{ (names + [batch]) | join(', ') }}
from new_deliveries
left anti join delivered_before
    on new_deliveries.{{ key }} = delivered_before.{{ key }}
where new_deliveries.delivery = 1
    {%- endset -%}
    {%- do print(ddl ~ "\n\n" ~ sources ~ "\n\n" ~ staging) -%}
{% endmacro %}
