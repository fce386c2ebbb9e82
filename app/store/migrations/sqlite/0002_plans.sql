-- The last plan number given out per repository: plan-NNN is reserved by
-- one upsert, so two requests (even on two replicas) never share a number,
-- and a number is never reused.
CREATE TABLE plan_counters (
    repository text PRIMARY KEY NOT NULL,
    last_number integer NOT NULL
) WITHOUT ROWID;

-- Plans and where their forge stands. Columns are what queries select on;
-- the rest of the plan is the JSON in data.
CREATE TABLE plans (
    id integer PRIMARY KEY AUTOINCREMENT,
    installation_id integer NOT NULL,
    repository text NOT NULL,
    number integer NOT NULL,
    issue integer NOT NULL,
    pr integer NOT NULL DEFAULT 0,
    trigger text NOT NULL,
    run text NOT NULL CHECK (run IN ('idle', 'queued', 'running')),
    status text NOT NULL,
    cancel_requested boolean NOT NULL DEFAULT false,
    generation integer NOT NULL DEFAULT 0,
    -- Leases in unix milliseconds: compared as numbers on both databases.
    lease_owner text,
    lease_until_ms integer,
    data text NOT NULL,
    created_at timestamp NOT NULL,
    updated_ms integer NOT NULL,
    UNIQUE (repository, number),
    UNIQUE (repository, trigger)
);

-- One active (queued or running) forge per issue.
CREATE UNIQUE INDEX plans_one_active_per_issue ON plans (repository, issue) WHERE run <> 'idle';
CREATE INDEX plans_repository_issue_idx ON plans (repository, issue);
CREATE INDEX plans_repository_pr_idx ON plans (repository, pr);
CREATE INDEX plans_run_idx ON plans (run, installation_id);
