-- Whether any limit across the fleet exists (claims skip the limits when none does).
SELECT EXISTS (SELECT 1 FROM operation_limits)
