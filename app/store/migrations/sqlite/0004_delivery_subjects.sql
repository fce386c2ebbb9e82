-- The comment or review each accepted delivery acted on. The signature covers
-- a webhook's body but not its X-GitHub-Delivery header, so a body replayed
-- under a new delivery id would otherwise act twice. Kept after the delivery
-- is pruned: a replay can come at any time.
CREATE TABLE delivery_subjects (
    subject text PRIMARY KEY NOT NULL,
    delivery_id text NOT NULL,
    received_at timestamp NOT NULL
) WITHOUT ROWID;
