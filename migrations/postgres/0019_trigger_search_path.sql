-- Rolling deploy: safe while workers run: catalog changes to the trigger functions only, no
-- table lock, no scan; sessions use the new setting on their next call.
--
-- Each oprec trigger function finds its tables in the schema it lives in, whatever the search
-- path of the session whose statement fires it. The functions name their tables unqualified, so
-- in a schema other than public an operator's `UPDATE s.operations ...` from a session whose
-- search path lacks s failed (`relation "operation_counts" does not exist`), and the whole
-- statement with it. Pinned to the function's own schema, not to the migrating session's path.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'operation_counts_insert()', 'operation_counts_update()', 'operation_counts_delete()',
        'operation_counts_truncate()', 'attempt_minutes_insert()'
    ]::regprocedure[] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %s', f,
                       (SELECT p.pronamespace::regnamespace FROM pg_proc p WHERE p.oid = f));
    END LOOP;
END
$$;
