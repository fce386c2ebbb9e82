-- When the reconciler last asked GitHub about a quiet plan (one no webhook
-- moved for a while), in Unix milliseconds, 0 for never: it looks at the
-- least recently looked first, and at each at most once a period, so a
-- plan waiting days for its approval costs a REST call a period, not one
-- a run.
ALTER TABLE plans ADD COLUMN looked_ms bigint NOT NULL DEFAULT 0;
