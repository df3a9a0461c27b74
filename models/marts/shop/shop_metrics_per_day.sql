{{ config(
    partition_by=['window_date'],
    event_time='window_start',
) }}

{{ shop_metrics('1 day') }}
