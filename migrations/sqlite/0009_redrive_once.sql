-- Rolling deploy: safe while workers run; two defaulted columns, filled for re-driven copies,
-- and a unique index over those copies only, under the write lock for a moment.
-- redrive_root: the first operation of a re-drive lineage (NULL for an operation never re-driven
-- as new). Its id is the effect key of every copy down the lineage, so a provider that
-- deduplicates on the effect key sees one effect whichever copy performs it.
--
-- redrive_duplicate: a second copy of one parent, made by two re-drives running at once before
-- this migration. Kept with its history and its link; only the first copy counts as the parent's,
-- and the unique index below holds every later copy to one per parent.
ALTER TABLE operations ADD COLUMN redrive_root TEXT;
ALTER TABLE operations ADD COLUMN redrive_duplicate INTEGER NOT NULL DEFAULT 0 CHECK (redrive_duplicate IN (0, 1));

WITH RECURSIVE lineage (id, root) AS (
    SELECT c.id, c.redrive_of
    FROM operations c JOIN operations p ON p.id = c.redrive_of
    WHERE p.redrive_of IS NULL
  UNION ALL
    SELECT c.id, l.root
    FROM operations c JOIN lineage l ON c.redrive_of = l.id
)
UPDATE operations SET redrive_root = (SELECT root FROM lineage l WHERE l.id = operations.id)
WHERE redrive_of IS NOT NULL;

UPDATE operations SET redrive_root = redrive_of
WHERE redrive_of IS NOT NULL AND redrive_root IS NULL;

UPDATE operations SET redrive_duplicate = 1
WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY redrive_of ORDER BY created_at, id) AS n
                             FROM operations WHERE redrive_of IS NOT NULL)
             WHERE n > 1);

CREATE UNIQUE INDEX operations_redrive_of_once
    ON operations (redrive_of) WHERE redrive_of IS NOT NULL AND redrive_duplicate = 0;
