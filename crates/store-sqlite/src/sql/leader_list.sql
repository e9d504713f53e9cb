-- The leaderships whose lease has not run out at ?1 (now), by name.
SELECT name, holder, lease_until, since, settings FROM leaders
WHERE lease_until > ?1
ORDER BY name
