-- One operation by id ($1). Walks the primary key.
SELECT * FROM operations WHERE id = $1
