-- Whether the server's autovacuum keeps oprec's tables: it is on (with the statistics it needs)
-- and none of the tables in $1 (names resolved on the search path) turns it off for itself.
SELECT current_setting('autovacuum')::bool
   AND current_setting('track_counts')::bool
   AND NOT EXISTS (
       SELECT 1
       FROM pg_class c, unnest(c.reloptions) AS o(option)
       WHERE c.oid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) AS t(t))
         AND o.option ~* '^autovacuum_enabled=(false|off|no|0)$'
   ) AS covered
