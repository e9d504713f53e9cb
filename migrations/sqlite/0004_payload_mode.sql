-- Whether an operation's payload is a snapshot of its input taken at enqueue or a reference to
-- state its handler reads at run time: the kind declares it, every enqueue writes it, a re-drive
-- as new copies it, and the re-drive dry run groups by it. Operations enqueued before this
-- migration keep NULL: nobody recorded which one they were.
ALTER TABLE operations
    ADD COLUMN payload_mode TEXT CHECK (payload_mode IN ('snapshot', 'reference'));
