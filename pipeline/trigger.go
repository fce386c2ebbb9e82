package pipeline

// HasCommand reports whether a comment body holds a Forge command line;
// handlers use it to enqueue work only for comments that ask for some.
func HasCommand(body string) bool {
	_, ok := ParseCommand(body)
	return ok
}
