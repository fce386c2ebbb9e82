-- Where the pull request of each fact's plan stands: open, merged, or
-- closed unmerged. The facts are written to DECISIONS.md on that pull
-- request for people to review, so its merge is their review: only the
-- facts of a merged pull request reach later plans' prompts.
ALTER TABLE facts ADD COLUMN plan_pr text NOT NULL DEFAULT 'open' CHECK (plan_pr IN ('open', 'merged', 'closed'));

-- Facts learned before: their plan's pull request merged (the plan keeps
-- the status it was merged as), or ended unmerged; the rest wait.
UPDATE facts SET plan_pr = 'merged' WHERE EXISTS (SELECT 1 FROM plans
    WHERE plans.repository = facts.repository AND plans.number = facts.plan_number
      AND COALESCE(plans.data::jsonb ->> 'MergedFrom', '') <> '');
UPDATE facts SET plan_pr = 'closed' WHERE plan_pr = 'open' AND EXISTS (SELECT 1 FROM plans
    WHERE plans.repository = facts.repository AND plans.number = facts.plan_number
      AND plans.status IN ('CLOSED', 'CANCELLED'));
