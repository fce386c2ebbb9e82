-- The choices people made among the options of a phase's decision request
-- while a job runs the plan (issue 15: the other phases go on meanwhile),
-- as a JSON object by phase id, '{}' for none: like the stop column, the
-- job's saves never write it, so a choice made while the job works is not
-- undone; the job takes each one between two phases and drops it.
ALTER TABLE plans ADD COLUMN choices text NOT NULL DEFAULT '{}';
