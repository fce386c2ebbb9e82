package pipeline

import "fmt"

// MaxFileBytes is GitHub's limit on one file in a repository: a change
// with a larger file is refused before it is read.
const MaxFileBytes = 100 << 20

// ChangeTooLargeError refuses an agent's changes that are larger than
// Forge reads into memory to commit: one file over MaxFileBytes (Total
// false), or all of them over the server's git.max_change_bytes.
type ChangeTooLargeError struct {
	Path  string
	Size  int64
	Limit int64
	Total bool
}

func (e *ChangeTooLargeError) Error() string {
	if e.Total {
		return fmt.Sprintf("the changed files total more than %s (git.max_change_bytes); refused at %s", byteSize(e.Limit), e.Path)
	}
	return fmt.Sprintf("%s is %s, over GitHub's %s limit for a file", e.Path, byteSize(e.Size), byteSize(e.Limit))
}

// byteSize writes n bytes as a person reads it: 50 MiB, 1.5 KiB, 200 B.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := []string{"KiB", "MiB", "GiB", "TiB"}[exp]
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
