-- What happened to each plan, for its timeline on the dashboard: the
-- webhook deliveries that moved it, the jobs that worked on it, its agent
-- calls and the writes Forge made to GitHub for it. One row per event,
-- written once; retention.max_age prunes them by age.
CREATE TABLE plan_events (
    id integer PRIMARY KEY,
    plan_id integer NOT NULL,
    kind text NOT NULL CHECK (kind IN ('delivery', 'job', 'agent', 'github')),
    -- When it began and how long it took, in milliseconds.
    at_ms integer NOT NULL,
    duration_ms integer NOT NULL DEFAULT 0,
    name text NOT NULL,
    detail text NOT NULL DEFAULT '',
    outcome text NOT NULL DEFAULT '',
    tokens integer NOT NULL DEFAULT 0,
    cost real NOT NULL DEFAULT 0,
    -- A delivery's id: each of its jobs that works on the plan names it, and
    -- it is recorded once. NULL for the other kinds, which never conflict.
    ref text,
    UNIQUE (plan_id, ref)
);

CREATE INDEX plan_events_plan_idx ON plan_events (plan_id, at_ms);
-- Pruning scans by age.
CREATE INDEX plan_events_at_idx ON plan_events (at_ms);
