{% macro _check_session_settings() %}
    {#- Stops the run before any model, in one line naming the setting and the value to put in
        the profile, when the session lacks a setting the package relies on and cannot set for
        itself (on a Thrift Server a `set` holds for one connection only, and dbt's threads each
        have their own):
        - spark.sql.session.timeZone UTC: a day model's days are UTC days, in its SQL (to_date)
          and in the package's plan alike; a session in another zone would cut them elsewhere,
          and a zone that changes between runs would recompute the wrong days.
        - spark.sql.hive.metastorePartitionPruning false: with it on, Spark asks the Hive
          metastore for the partitions a filter selects, and the metastore's filter parser
          rejects a partition column whose name starts with `_` (_ingestion_batch_id): every
          read of new batches from a parquet table would fail deep inside the metastore.
        (The dynamic partition overwrite the package's writes need it sets on their own
        connection: _dynamic_partition_overwrite.) Two `set` queries per invocation. -#}
    {%- set required = [
        ('spark.sql.session.timeZone', ['UTC', 'Etc/UTC', 'Z', '+00:00'], 'UTC'),
        ('spark.sql.hive.metastorePartitionPruning', ['false'], '"false"'),
    ] -%}
    {%- for key, accepted, fix in required -%}
        {%- set found = run_query('set ' ~ key).rows[0][1] | string -%}
        {%- if found not in accepted and found | lower not in accepted -%}
            {%- do exceptions.raise_compiler_error(
                "kappa: the session has " ~ key ~ " = " ~ found ~ ", and the package needs "
                ~ accepted[0] ~ ": put `" ~ key ~ ": " ~ fix ~ "` under server_side_parameters in"
                ~ " the profile (on a Thrift Server: `\"set:hiveconf:" ~ key ~ "\": " ~ fix ~ "`);"
                ~ " nothing was run"
            ) -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}
