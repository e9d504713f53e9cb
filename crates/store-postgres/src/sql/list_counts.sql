-- How many operations of status $1 (NULL: any) and kind $2 (NULL: any) there are, per status:
-- those not re-driven as new when $3, those re-driven as new when $4. The listing's size before
-- its other filters, from the trigger-kept counts (operation_counts), never the operations table.
SELECT status,
       coalesce(sum(operations) FILTER (WHERE CASE WHEN redriven THEN $4 ELSE $3 END), 0)::int8
FROM operation_counts
WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR kind = $2)
GROUP BY status
