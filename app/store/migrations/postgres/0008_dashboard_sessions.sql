-- People signed in to the dashboard with GitHub. A row is found by the
-- SHA-256 of the browser's cookie, and the person's GitHub token is sealed
-- with a key derived from the cookie: the database alone opens no session
-- and reveals no token. repos is the JSON list of the repositories the
-- person can read, as GitHub said at repos_ms.
CREATE TABLE dashboard_sessions (
    id text PRIMARY KEY,
    login text NOT NULL,
    token text NOT NULL,
    repos text NOT NULL,
    repos_ms bigint NOT NULL,
    expires_ms bigint NOT NULL,
    created_ms bigint NOT NULL
);

CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_ms);
