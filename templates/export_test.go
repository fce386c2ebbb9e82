package templates

// The embedded file systems, for the test that every template has a
// snapshot case: the list must be what the binary carries, not the disk.
var (
	TextFS = textFS
	WebFS  = webFS
)
