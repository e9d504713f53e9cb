-- Rolling deploy: safe while workers run: adds two columns (no rewrite: one is nullable, the other has a constant
-- default) and fills them for re-driven copies only. The unique index that enforces "at most one
-- copy per parent" is built without blocking writes by the next migration.
--
-- redrive_root: the first operation of a re-drive lineage (NULL for an operation never re-driven
-- as new). Its id is the effect key of every copy down the lineage, so a provider that
-- deduplicates on the effect key sees one effect whichever copy performs it.
--
-- redrive_duplicate: a second copy of one parent, made by two re-drives running at once before
-- this migration. Kept with its history and its link; only the first copy counts as the parent's.
ALTER TABLE operations
    ADD COLUMN redrive_root uuid,
    ADD COLUMN redrive_duplicate boolean NOT NULL DEFAULT false;

WITH RECURSIVE lineage (id, root) AS (
    SELECT c.id, c.redrive_of
    FROM operations c JOIN operations p ON p.id = c.redrive_of
    WHERE p.redrive_of IS NULL
  UNION ALL
    SELECT c.id, l.root
    FROM operations c JOIN lineage l ON c.redrive_of = l.id
)
UPDATE operations o SET redrive_root = l.root FROM lineage l WHERE o.id = l.id;

-- A copy whose lineage cannot be walked (a parent no longer in the table) keeps its parent.
UPDATE operations SET redrive_root = redrive_of
WHERE redrive_of IS NOT NULL AND redrive_root IS NULL;

UPDATE operations o SET redrive_duplicate = true
FROM (SELECT id, row_number() OVER (PARTITION BY redrive_of ORDER BY created_at, id) AS n
      FROM operations WHERE redrive_of IS NOT NULL) d
WHERE o.id = d.id AND d.n > 1;
