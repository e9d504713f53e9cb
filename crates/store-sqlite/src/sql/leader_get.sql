-- The leadership ?1 as it stands, held or lapsed. Walks the primary key.
SELECT name, holder, lease_until, since, settings FROM leaders WHERE name = ?1
