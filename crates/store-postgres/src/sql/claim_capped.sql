-- The picked rows a claim may take under limits with little room (core's ClaimAllowance): at
-- most {kind_caps}[i] of kind {kinds}[i] and at most {dependency_caps}[i] calling dependency
-- {dependencies}[i], aged operations first (eligible at or before {aged_before}), then by
-- priority, oldest eligible first. A row ranked past one cap is not taken even if it is within
-- the other, which can leave room unused in this claim but never goes over a limit. Spliced by
-- sql.rs into the `chosen` step of claim_eligible.sql and claim_by_ids.sql, with their own
-- parameter numbers; the rows were locked by the walk, so joining them again is cheap.
SELECT r.pid
FROM (
    SELECT p.pid, o.kind, o.dependency,
           row_number() OVER (PARTITION BY o.kind ORDER BY o.next_eligible_at <= {aged_before} DESC,
                              o.priority DESC, o.next_eligible_at, o.id) AS kind_rank,
           row_number() OVER (PARTITION BY o.dependency ORDER BY o.next_eligible_at <= {aged_before} DESC,
                              o.priority DESC, o.next_eligible_at, o.id) AS dependency_rank
    FROM picked p
    JOIN operations o ON o.id = p.pid
) AS r
LEFT JOIN unnest({kinds}::text[], {kind_caps}::int8[]) AS kc(name, cap) ON kc.name = r.kind
LEFT JOIN unnest({dependencies}::text[], {dependency_caps}::int8[]) AS dc(name, cap)
    ON dc.name = r.dependency
WHERE (kc.cap IS NULL OR r.kind_rank <= kc.cap)
  AND (dc.cap IS NULL OR r.dependency_rank <= dc.cap)
