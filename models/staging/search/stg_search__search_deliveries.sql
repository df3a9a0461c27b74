{{ stage_deliveries(source('search', 'searches'), 'searches') }}
