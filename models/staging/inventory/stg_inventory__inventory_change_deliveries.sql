{{ stage_deliveries(source('inventory', 'inventory_changes'), 'inventory_changes') }}
