{% macro fault_point(point) %}
    {#- Fault injection for the fault tests (tests/pytest/test_faults.py). Does nothing unless
        the environment variable KAPPA_SHOP_FAULT_POINT is `<model name>:<point>`: then it logs
        `kappa fault point <model>:<point> reached` and pauses the run in a Spark SQL sleep, so
        that the test can kill the process right there with SIGKILL. -#}
    {%- if execute and env_var('KAPPA_SHOP_FAULT_POINT', '') == model.name ~ ':' ~ point -%}
        {{ log('kappa fault point ' ~ model.name ~ ':' ~ point ~ ' reached', info=true) }}
        {%- call statement('fault_point_pause') -%}
            select reflect('java.lang.Thread', 'sleep', cast(600000 as bigint)) as paused
        {%- endcall -%}
    {%- endif -%}
{% endmacro %}
