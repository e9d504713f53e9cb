-- Rolling deploy: safe while workers run: a new table that operators write (`oprec limit`) and
-- the claims of this release's workers read; no lock on operations and no scan. The previous
-- release's workers ignore it: until every worker runs this release, the old ones claim without
-- regard to the limits, so a limit holds across the fleet only once the rollout is done.

-- One row per limit across the fleet (README, "Limits across the fleet"):
--   scope, value:   the kind, or the dependency (the operations' `dependency` column), limited;
--   max_running:    at most this many of its operations running (claimed) at once;
--   per_second:     at most this many attempts started against it in any one second;
--   recent_starts:  the claims' starts of the last second, as core's RateWindow JSON
--                   ([[slot start in ms, starts], ...]); each limited claim locks the row
--                   (FOR UPDATE), counts, claims and writes it back before it commits;
--   reason, actor, set_at: why, who and when, as `oprec limits` shows them.
CREATE TABLE operation_limits (
    scope         text        NOT NULL CHECK (scope IN ('kind', 'dependency')),
    value         text        NOT NULL CHECK (length(value) BETWEEN 1 AND 200),
    max_running   integer     CHECK (max_running > 0),
    per_second    integer     CHECK (per_second > 0),
    recent_starts text        NOT NULL DEFAULT '[]',
    reason        text,
    actor         text        NOT NULL,
    set_at        timestamptz NOT NULL,
    PRIMARY KEY (scope, value),
    CHECK (max_running IS NOT NULL OR per_second IS NOT NULL)
);
