-- What a repository's plans taught Forge (issue 15 §5): the facts its
-- memory agent wrote down when each plan was done, numbered per
-- repository (/forge forget names one), for the prompts of later plans.
-- A fact people dropped keeps its row with forgotten_ms set: a plan's step
-- that runs again finds it learned, and learns nothing twice.
CREATE TABLE facts (
    repository text NOT NULL,
    number integer NOT NULL,
    plan_number integer NOT NULL,
    category text NOT NULL CHECK (category IN ('convention', 'gotcha', 'architecture', 'pattern', 'decision')),
    body text NOT NULL,
    confidence double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    created_ms bigint NOT NULL,
    forgotten_ms bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (repository, number)
);

CREATE INDEX facts_plan_idx ON facts (repository, plan_number);

-- The last fact number given out per repository: a plan's facts are
-- numbered by one upsert, so two plans done at once never share a number.
CREATE TABLE fact_counters (
    repository text PRIMARY KEY,
    last_number integer NOT NULL
);
