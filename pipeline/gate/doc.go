// Package gate is the approval gate of DESIGN §5: given a plan's status,
// the reviews on its pull request, the people's permissions, the commands
// that approved it and the required checks, Evaluate says whether the plan
// is approved and, when it is not, every reason, as template data
// (text/reason.md) so a review, the command and the button answer in one
// wording. SecurityConcern says whether a plan concerns security (the
// paths it changes, the words it names) and Evaluate then asks one of
// security.reviewers among the approvers. CheckGates decides a pipeline step's gates
// (repoconfig.Directive) on the facts gathered before the step runs, and
// lists every one unmet with what was seen.
package gate
