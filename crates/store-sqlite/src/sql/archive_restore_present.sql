-- Whether an archived operation's id (?1) is taken, and whether the operation it re-drives (?2,
-- NULL for none) is present. Looks both up by primary key.
SELECT EXISTS (SELECT 1 FROM operations WHERE id = ?1) AS present,
       (?2 IS NULL OR EXISTS (SELECT 1 FROM operations WHERE id = ?2)) AS parent
