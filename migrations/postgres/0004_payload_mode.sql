-- Whether a re-drive replays the enqueue-time snapshot or acts on today's data, as the kind
-- declared it at enqueue (re-drive as new copies it). Operations enqueued before oprec kept it
-- stay NULL.
ALTER TABLE operations
    ADD COLUMN payload_mode text CHECK (payload_mode IN ('snapshot', 'reference'));
