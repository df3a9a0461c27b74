{% macro surrogate_key(column_names) %}
    {#- A deterministic string key: md5 of the columns cast to text, null written as a marker
        that no real value takes, joined with a separator that keeps ('a', 'bc') apart from
        ('ab', 'c'). Same inputs, same key, on every run and every engine. -#}
    md5(concat_ws(
        '-|-',
        {%- for column_name in column_names %}
        coalesce(cast({{ column_name }} as string), '_kappa_shop_null_'){{ "," if not loop.last }}
        {%- endfor %}
    ))
{% endmacro %}
