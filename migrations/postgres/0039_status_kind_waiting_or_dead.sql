-- no-transaction
-- Rolling deploy: safe while workers run: built CONCURRENTLY (writes go on), alone in its file.
-- The previous release does not need it; 0040 drops the index it replaces only once it is built.
--
-- operations_status_kind (status, kind, id) of the operations that wait (pending, held,
-- reconciling) or are dead: not of the running ones, nor of the succeeded and cancelled ones.
-- A claim and a completion each change a row's status, and an update that changes an indexed
-- column writes a new entry in every index whose condition the new row version meets: with the
-- whole-table index, every claim and every completion wrote a (status, kind, id) entry. The
-- running rows are found by operations_running_lease (lease_until), which the claim writes
-- anyway, and the succeeded and cancelled ones by operations_finished_kind (status, kind,
-- terminal_at), which the completion writes anyway: the listings by status read them there
-- (list_ids.sql), and the "work exists" check and the backlog's oldest operation read running
-- rows there (claim_work_exists.sql, stats_backlog_oldest.sql).
CREATE INDEX CONCURRENTLY IF NOT EXISTS operations_status_kind_waiting_or_dead
    ON operations (status, kind, id) WHERE status NOT IN ('running', 'succeeded', 'cancelled');
