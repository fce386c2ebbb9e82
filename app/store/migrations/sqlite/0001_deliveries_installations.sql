-- Installations Forge has heard of. A missing row means "active": Forge may
-- have been installed before it started keeping this table.
CREATE TABLE installations (
    id integer PRIMARY KEY,
    account text NOT NULL DEFAULT '',
    suspended_at timestamp,
    -- Final: GitHub gives a reinstalled app a new installation id.
    deleted_at timestamp,
    updated_at timestamp NOT NULL
);

-- Every webhook delivery Forge answered, keyed by X-GitHub-Delivery, so that a
-- redelivery is recognised and does nothing new. WITHOUT ROWID: rows are
-- stored in key order, one b-tree instead of a table plus a key index.
CREATE TABLE deliveries (
    delivery_id text PRIMARY KEY NOT NULL,
    event text NOT NULL,
    action text NOT NULL DEFAULT '',
    -- No foreign key: events arrive for installations never seen created.
    installation_id integer,
    repository text NOT NULL DEFAULT '',
    outcome text NOT NULL CHECK (outcome IN ('accepted', 'ignored')),
    received_at timestamp NOT NULL
) WITHOUT ROWID;

-- Pruning old deliveries scans by age.
CREATE INDEX deliveries_received_at_idx ON deliveries (received_at);
