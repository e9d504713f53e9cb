-- The time the newest recorded hold happened (NULL: none yet). Walks alerts_holds.
SELECT max(source_at) FROM alerts WHERE event = 'held'
