-- The status of one operation, to say why a resolution found nothing to resolve. Walks the
-- primary key.
SELECT status FROM operations WHERE id = ?1
