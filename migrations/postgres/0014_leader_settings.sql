-- Rolling deploy: safe while workers run: one nullable column, no rewrite, no scan. The previous
-- release's leaders neither read nor set it: while one of them leads, the column keeps what the
-- last leader of this release published.
-- What the holder of a leadership applies, published for operators: the maintenance leader's
-- retention policy (its kinds' own ages included), which `oprec retention show` previews, so that
-- the preview is the fleet's policy and not the defaults of the machine it runs on.
ALTER TABLE leaders ADD COLUMN settings jsonb CHECK (settings IS NULL OR jsonb_typeof(settings) = 'object');
