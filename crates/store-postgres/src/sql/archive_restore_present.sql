-- Which of these ids ($1 uuid[]) name an operation in the store: a restore's ids (never written
-- over) and the operations its records re-drive. Looks each up by primary key.
SELECT id FROM operations WHERE id = ANY($1)
