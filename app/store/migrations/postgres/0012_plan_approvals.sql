-- The people who approved a plan while a job drafted or audited it, as a
-- JSON array of logins, '[]' for none: like the stop column, the job's
-- saves never write it, so an approval given while the job works is kept
-- until the loop reaches the approval gate, which counts it.
ALTER TABLE plans ADD COLUMN approvals text NOT NULL DEFAULT '[]';
