package pipeline

import (
	"fmt"
)

// SecretError refuses a commit whose files carry one of Forge's secrets
// (or any key or token by its form): nothing of the commit is written, and
// the step fails with a comment naming the file.
type SecretError struct {
	// Path is the file that carries it.
	Path string
	// What names the secret without its value ("the webhook secret").
	What string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("%s contains %s; Forge does not commit its secrets", e.Path, e.What)
}
