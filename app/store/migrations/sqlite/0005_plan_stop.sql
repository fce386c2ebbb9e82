-- What a person asked a plan's running job to do (cancel, close, skip its
-- phase), '' for nothing: the job's saves never write it, so a request made
-- while the job works is not undone. It replaces cancel_requested, whose
-- pending requests become 'cancel'. cancel_requested stays (unused) so the
-- migration is one simple ALTER on both databases and a binary from before
-- it can still read the table.
ALTER TABLE plans ADD COLUMN stop text NOT NULL DEFAULT '';
UPDATE plans SET stop = 'cancel' WHERE cancel_requested;
