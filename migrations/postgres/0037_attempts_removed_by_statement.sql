-- Rolling deploy: safe while workers run: yes; dropping the foreign key takes the strongest lock on
-- operations and operation_attempts until the migration commits (catalog changes only: no scan,
-- no row rewritten), so writers wait that moment. The previous release keeps working against this
-- schema: its completions record attempts as before, and its retention's and archive's removals
-- of operations still take the operations' attempts with them (the trigger below).
--
-- An operation's attempts are removed with it by a statement trigger, one DELETE per statement
-- that removes operations, in place of the foreign key from operation_attempts.operation_id to
-- operations (0001, ON DELETE CASCADE, which deleted them one operation at a time).
--
-- Why: the key checked every attempt recorded, in every completion of every operation: a probe of
-- operations' primary key, and a KEY SHARE lock on the operation's row, which the same statement
-- had just updated (one more write of the row's header and one more WAL record each). In drains of
-- 100,000 no-op operations with 32 handlers, the same build with the key dropped ran 16-18% faster
-- in three alternating pairs, with about 12 µs less machine CPU and 60 bytes less WAL per
-- operation (BENCHMARKS.md, "Figures, 2026-12-04 (evening)").
--
-- What the key guarded still holds: an attempt is recorded only by the statement that ends its
-- claim, from the operation row that statement updated (complete_apply.sql), or by a restore for
-- the operations it inserted in the same transaction (archive_restore_attempts.sql), so its
-- operation exists by construction; and whoever removes operations (retention, `oprec archive`,
-- an operator's DELETE) removes their attempts in the same statement. A TRUNCATE of operations
-- empties operation_attempts too (it could not run at all while the key was there). The steps
-- (operation_steps) keep their key: nothing writes them for each attempt.
CREATE FUNCTION operation_attempts_remove() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    -- By operation_attempts_operation (operation_id, id), one probe per removed operation,
    -- whatever the statistics say of either table.
    DELETE FROM operation_attempts
    WHERE operation_id = ANY (ARRAY(SELECT id FROM old_rows));
    RETURN NULL;
END
$$;

CREATE FUNCTION operation_attempts_truncate() RETURNS trigger LANGUAGE plpgsql
SET jit = off AS $$
BEGIN
    TRUNCATE operation_attempts;
    RETURN NULL;
END
$$;

-- Each function finds its tables in the schema it lives in, whatever the search path of the
-- session whose statement fires it (as 0019 pinned the others).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'operation_attempts_remove()', 'operation_attempts_truncate()'
    ]::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f,
                       (SELECT p.pronamespace::regnamespace FROM pg_proc p WHERE p.oid = f));
    END LOOP;
END
$$;

CREATE TRIGGER operations_attempts_remove AFTER DELETE ON operations
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION operation_attempts_remove();

CREATE TRIGGER operations_attempts_truncate AFTER TRUNCATE ON operations
    FOR EACH STATEMENT EXECUTE FUNCTION operation_attempts_truncate();

-- Named as PostgreSQL names an unnamed key (0001 declared it inline); IF EXISTS, so that a schema
-- whose key an operator dropped or renamed by hand migrates too.
ALTER TABLE operation_attempts DROP CONSTRAINT IF EXISTS operation_attempts_operation_id_fkey;
