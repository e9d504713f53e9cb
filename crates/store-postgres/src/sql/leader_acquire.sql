-- Takes the leadership $2 for $3, or keeps it (its lease extended), at "now" ($1; NULL: the
-- database's clock) for $4 milliseconds: granted when nobody holds it, when its holder's lease has
-- run out, or when $3 already holds it; $5 is what the holder applies (published for operators).
-- Returns the leadership when granted, nothing otherwise.
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
INSERT INTO leaders AS l (name, holder, lease_until, since, settings)
SELECT $2, $3, now.t + $4::int8 * interval '1 millisecond', now.t, $5::jsonb FROM now
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    lease_until = excluded.lease_until,
    settings = excluded.settings,
    since = CASE WHEN l.holder = excluded.holder THEN l.since ELSE excluded.since END
WHERE l.holder = excluded.holder OR l.lease_until < excluded.since
RETURNING name, holder, lease_until, since, settings
