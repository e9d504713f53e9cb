-- How many operations of the kinds $1 (empty: any) whose last failure class is one of $2 (empty:
-- any; '' is "never failed") there are, per status: a filter that narrows by nothing else is
-- answered from the trigger-kept counts (operation_counts), exact in the statement's snapshot,
-- instead of counting the table (a kind of 143,000 operations never analyzed: ~150 ms).
SELECT status, sum(operations)::int8 AS count
FROM operation_counts
WHERE (cardinality($1::text[]) = 0 OR kind = ANY($1::text[]))
  AND (cardinality($2::text[]) = 0 OR failure_class = ANY($2::text[]))
GROUP BY status
HAVING sum(operations) <> 0
