-- Every published kind with its enqueue-time policy and who published it, by name. Reads the
-- small operation_kinds table whole.
SELECT kind, max_attempts, give_up_after_ms, first_delay_ms, payload_mode, dependency,
       published_by, code_version, published_at
FROM operation_kinds
ORDER BY kind
