-- Who asked the plan's running job to stop (a cancel or close by a
-- person, by login), '' for a stop nobody asked by name (the pull
-- request closed or merged while the job ran): written with the stop
-- column and cleared with it, so the job ends the plan as that person's
-- word and cleans up after it.
ALTER TABLE plans ADD COLUMN stop_by text NOT NULL DEFAULT '';
