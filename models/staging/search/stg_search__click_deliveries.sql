{{ stage_deliveries(source('search', 'clicks'), 'search_clicks') }}
