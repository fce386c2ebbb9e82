// Package docs holds the references generated from the code, beside it:
// the commands (from pipeline/command's table and the answers'
// templates), the configuration (from the configuration types and their
// doc tags) and a plan's lifecycle (from pipeline/plan's table).
// `go generate ./docs` writes them; a test fails when one is stale.
package docs

//go:generate go run ../cmd/forge docs .

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/plan"
)

// Reference is one generated file of this directory and what renders it.
type Reference struct {
	File   string
	Render func() (string, error)
}

// References are the generated files.
var References = []Reference{
	{"commands.md", func() (string, error) { return command.Markdown(), nil }},
	{"configuration.md", app.ConfigurationMarkdown},
	{"lifecycle.md", func() (string, error) { return plan.Markdown(), nil }},
}

// Write renders every reference into dir.
func Write(dir string) error {
	for _, r := range References {
		text, err := r.Render()
		if err != nil {
			return fmt.Errorf("render %s: %w", r.File, err)
		}
		if err := os.WriteFile(filepath.Join(dir, r.File), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
