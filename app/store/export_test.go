package store

// Queued reports how many Accept calls have submitted a delivery that the
// commit loop has not taken yet, so tests can fill a batch before Start.
func (in *Ingester) Queued() int64 { return in.pending.Load() }
