-- The repository's id on GitHub, which a rename keeps and a new repository
-- under an old name does not have: the dashboard finds the plans a person
-- may read by it. 0 for plans made before it was kept, which the dashboard
-- finds by name.
ALTER TABLE plans ADD COLUMN repository_id bigint NOT NULL DEFAULT 0;
CREATE INDEX plans_repository_id_idx ON plans (repository_id);
