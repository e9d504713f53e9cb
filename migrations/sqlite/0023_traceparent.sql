-- Rolling deploy: safe while workers run: adds one nullable column (no rewrite; the rows
-- already there are NULL, which its check passes). The previous release's processes name their
-- columns, so they neither write nor read it: their enqueues store no trace context and their
-- attempts link to none.
--
-- traceparent: the producer's W3C trace context (https://www.w3.org/TR/trace-context/), given
-- at enqueue (EnqueueOptions::traceparent, oprec enqueue --traceparent) or taken from the
-- producer's current span; every attempt's span links to it (README, "Traces"). The format is
-- checked in core (crates/core/src/trace_parent.rs); the CHECK keeps its shape.
ALTER TABLE operations ADD COLUMN traceparent TEXT
    CHECK (length(traceparent) = 55 AND traceparent GLOB '00-*-*-*'
           AND substr(traceparent, 3, 1) = '-' AND substr(traceparent, 36, 1) = '-'
           AND substr(traceparent, 53, 1) = '-'
           AND substr(traceparent, 4) NOT GLOB '*[^0-9a-f-]*');
