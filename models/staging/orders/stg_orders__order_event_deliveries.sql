{{ stage_deliveries(source('orders', 'order_events'), 'order_events') }}
