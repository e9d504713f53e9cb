-- Rolling deploy: safe while workers run: replaces one function's body, in place; nothing waits
-- but the statements that plan it in that moment. The previous release's statements call it by
-- name and get the same slots, so the counts it keeps are unchanged.
--
-- The five-minute slot of a creation time (0020), computed by date_bin, which is IMMUTABLE, in
-- place of date_trunc('hour', ...) and extract(minute ...) of a timestamptz, which are STABLE
-- (they read the session's time zone). A SQL function is inlined into the statement that calls
-- it only when its body is no more volatile than it is declared: the old body was not, so every
-- row paid a call of a SQL function (a few microseconds each). The backlog triggers call it for
-- every row an enqueue, a claim or a completion writes: at 1,000 rows a claim, 5.6 ms of each
-- claim and 8.6 ms of each completion went to it (auto_explain's trigger times), and a batched
-- enqueue ran about 30% slower than with it inlined (BENCHMARKS.md, 2026-12-04).
--
-- The same slots: slots are aligned to five minutes of UTC, as the old body's were in every
-- time zone whose offset is a whole multiple of five minutes (every zone in use today; only the
-- local mean times of the 19th century are not), so the slots already stored, the CHECK of
-- backlog_slots and creation_slots, and creation_slot_first_id/last_id (0033) all agree with it.
CREATE OR REPLACE FUNCTION backlog_slot(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE
PARALLEL SAFE AS $$
    SELECT date_bin('5 minutes', at, timestamptz '2000-01-01 00:00:00+00')
$$;
