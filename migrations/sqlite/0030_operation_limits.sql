-- Rolling deploy: safe while workers run: a new table that operators write (`oprec limit`) and
-- the claims of this release's workers read; the previous release's workers ignore it, so a
-- limit holds across the fleet only once every worker runs this release.
-- One row per limit; the columns mean what they mean on PostgreSQL
-- (migrations/postgres/0030_operation_limits.sql).
CREATE TABLE operation_limits (
    scope         TEXT    NOT NULL CHECK (scope IN ('kind', 'dependency')),
    value         TEXT    NOT NULL CHECK (length(value) BETWEEN 1 AND 200),
    max_running   INTEGER CHECK (max_running > 0),
    per_second    INTEGER CHECK (per_second > 0),
    recent_starts TEXT    NOT NULL DEFAULT '[]',
    reason        TEXT,
    actor         TEXT    NOT NULL,
    set_at        TEXT    NOT NULL,
    PRIMARY KEY (scope, value),
    CHECK (max_running IS NOT NULL OR per_second IS NOT NULL)
) STRICT;
