-- Takes the leadership ?1 for ?2 until ?4, at ?3 (now), or keeps it (its lease extended): granted
-- when nobody holds it, when its holder's lease has run out, or when ?2 already holds it. ?5:
-- what the holder applies (JSON text, published for operators). Returns
-- the leadership when granted, nothing otherwise.
INSERT INTO leaders AS l (name, holder, lease_until, since, settings)
VALUES (?1, ?2, ?4, ?3, ?5)
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    lease_until = excluded.lease_until,
    settings = excluded.settings,
    since = CASE WHEN l.holder = excluded.holder THEN l.since ELSE excluded.since END
WHERE l.holder = excluded.holder OR l.lease_until < excluded.since
RETURNING name, holder, lease_until, since, settings
