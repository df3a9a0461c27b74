{% macro _fault_point(point) %}
    {#- Fault injection for tests of crash recovery. Does nothing unless the environment
        variable KAPPA_FAULT_POINT is `<model name>:<point>`: then it logs `kappa fault point
        <model>:<point> reached` and pauses the run in a Spark SQL sleep, so that the test can
        kill the process right there with SIGKILL; `<model name>:<point>:fail` makes the model
        fail there with an error instead (a run that goes on to its end). The points:
        before_write, after_drop, after_write, after_commit (exact_incremental). -#}
    {%- if execute and env_var('KAPPA_FAULT_POINT', '') == model.name ~ ':' ~ point ~ ':fail' -%}
        {{ exceptions.raise_compiler_error('kappa fault point ' ~ model.name ~ ':' ~ point ~ ' reached: failing here') }}
    {%- endif -%}
    {%- if execute and env_var('KAPPA_FAULT_POINT', '') == model.name ~ ':' ~ point -%}
        {{ log('kappa fault point ' ~ model.name ~ ':' ~ point ~ ' reached', info=true) }}
        {#- fetched: on a `session` connection a select runs only when its rows are read -#}
        {%- call statement('fault_point_pause', fetch_result=true) -%}
            select reflect('java.lang.Thread', 'sleep', cast(600000 as bigint)) as paused
        {%- endcall -%}
    {%- endif -%}
{% endmacro %}
