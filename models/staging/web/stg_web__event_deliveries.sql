{{ stage_deliveries(source('web', 'events'), 'web_events') }}
