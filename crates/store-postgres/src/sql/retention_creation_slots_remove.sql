-- Removes creation slots (migrations 0033, 0034) older than a day before $1 whose id range no
-- operation is left in (retention removed them): every operation created in a slot has its id
-- in the slot's range, so none created then is left. At most 200 slots are looked at per pass,
-- from a random place among the old ones, so that slots kept by a long-lived operation (a dead
-- letter kept for years) never stop the rest from going, and a pass costs at most 200 probes
-- of the primary key. Run after `pg_advisory_xact_lock(creation_slots_lock())` in the same
-- transaction (retention.rs): a restore of old operations takes that lock shared, so this
-- statement's snapshot holds every old operation inserted before it, and one inserted after it
-- makes its slot again.
WITH old AS (
    SELECT min(slot) AS first_slot FROM creation_slots
), start AS (
    SELECT first_slot + random() * ($1::timestamptz - interval '1 day' - first_slot) AS at
    FROM old
    WHERE first_slot < $1::timestamptz - interval '1 day'
)
DELETE FROM creation_slots s
WHERE s.slot IN (SELECT c.slot FROM creation_slots c, start
                 WHERE c.slot >= date_trunc('hour', start.at)
                   AND c.slot < $1::timestamptz - interval '1 day'
                 ORDER BY c.slot LIMIT 200)
  AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.id BETWEEN s.first_id AND s.last_id)
