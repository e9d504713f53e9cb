-- Extends, in one statement, the leases of every claim a worker holds: the operations $2 with
-- their claim tokens $3 (arrays of the same length), each still running under its token, to
-- "now" ($1; NULL: the database's clock) + $4 ms. Returns the ids extended; a claim left out is
-- stale. Walks the primary key, whatever the statistics say: as complete_apply.sql, the rows are
-- found by `id = ANY($2)`, through an array the planner does not see into, and "still running" is
-- written as a lease being held.
UPDATE operations o
SET lease_until = coalesce($1::timestamptz, now()) + $4::int8 * interval '1 millisecond'
FROM UNNEST($2::uuid[], $3::uuid[]) AS h(id, token)
WHERE o.id = ANY (ARRAY(SELECT unnest($2::uuid[]))) AND o.id = h.id AND o.claim_token = h.token AND o.lease_until IS NOT NULL
RETURNING o.id
