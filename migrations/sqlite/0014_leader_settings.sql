-- Rolling deploy: safe while workers run: one nullable column. The previous release's leaders
-- neither read nor set it.
-- What the holder of a leadership applies, published for operators: the maintenance leader's
-- retention policy (its kinds' own ages included), which `oprec retention show` previews.
ALTER TABLE leaders ADD COLUMN settings TEXT CHECK (settings IS NULL OR (json_valid(settings) AND json_type(settings) = 'object'));
