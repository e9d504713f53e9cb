-- The leaderships whose lease has not run out at "now" ($1; NULL: the database's clock), by name.
SELECT name, holder, lease_until, since, settings FROM leaders
WHERE lease_until > coalesce($1::timestamptz, now())
ORDER BY name
