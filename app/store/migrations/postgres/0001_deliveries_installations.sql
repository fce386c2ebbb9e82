-- Installations Forge has heard of. A missing row means "active": Forge may
-- have been installed before it started keeping this table.
CREATE TABLE installations (
    id bigint PRIMARY KEY,
    account text NOT NULL DEFAULT '',
    suspended_at timestamptz,
    -- Final: GitHub gives a reinstalled app a new installation id.
    deleted_at timestamptz,
    updated_at timestamptz NOT NULL
);

-- Every webhook delivery Forge answered, keyed by X-GitHub-Delivery, so that a
-- redelivery is recognised and does nothing new.
CREATE TABLE deliveries (
    delivery_id text PRIMARY KEY,
    event text NOT NULL,
    action text NOT NULL DEFAULT '',
    -- No foreign key: events arrive for installations never seen created.
    installation_id bigint,
    repository text NOT NULL DEFAULT '',
    outcome text NOT NULL CHECK (outcome IN ('accepted', 'ignored')),
    received_at timestamptz NOT NULL
);

-- Pruning old deliveries scans by age.
CREATE INDEX deliveries_received_at_idx ON deliveries (received_at);
