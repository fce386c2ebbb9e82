-- Agent conversations kept across the rounds of one plan (seed 000 §5), so
-- a restart does not lose them. The key names the plan and the role.
CREATE TABLE agent_sessions (
    session_key text PRIMARY KEY,
    data text NOT NULL,
    updated_ms bigint NOT NULL
);
