package handlers

import "github.com/riverqueue/river"

// Delivery is one webhook delivery for the Ingester to record, with the
// jobs it starts: what a handler hands over.
type Delivery struct {
	// ID is the X-GitHub-Delivery header; GitHub keeps it on redelivery.
	ID, Event, Action, Repository string
	// InstallationID is 0 for events outside any installation (ping).
	InstallationID int64
	// InstallationChange, when set ("created", "deleted", "suspend",
	// "unsuspend"), is applied to the installations in the same
	// transaction (from installation events), before the ignore check.
	InstallationChange string
	// Account is the installation's account login, kept with the change.
	Account string
	// Subject names what the delivery acts on: the GitHub object when it
	// has an id of its own ("comment:123", "review:456"), else the signed
	// body ("label:<sha256>", "button:<sha256>"). A later delivery with the
	// same subject under another delivery id is a replay: OutcomeReplayed.
	Subject string
	// Jobs are enqueued, in the delivery's transaction, only if the delivery
	// is accepted.
	Jobs []river.InsertManyParams
}

// Outcome names what became of a delivery: the Ingester's answer, and the
// word in metrics, logs and the HTTP answer.
type Outcome string

const (
	// OutcomeAccepted: recorded, and its jobs enqueued.
	OutcomeAccepted Outcome = "accepted"
	// OutcomeDuplicate: the delivery id was recorded before; nothing was
	// written.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeReplayed is a signed body seen before under another delivery
	// id: someone replayed it (GitHub's own redelivery keeps the id).
	OutcomeReplayed Outcome = "replayed"
	// OutcomeIgnored: recorded, but its installation is deleted or
	// suspended, so no job was enqueued.
	OutcomeIgnored Outcome = "ignored"
)
