{{ stage_deliveries(source('users', 'profile_changes'), 'user_profile_changes') }}
