//go:build tools

// Package forge pins the modules the project builds on while their users are written.
package forge

import (
	_ "github.com/bradleyfalzon/ghinstallation/v2"
	_ "github.com/getkin/kin-openapi/openapi3"
	_ "github.com/gkampitakis/go-snaps/snaps"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/google/go-github/v66/github"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/palantir/go-githubapp/githubapp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/riverqueue/river"
	_ "github.com/riverqueue/river/riverdriver/riverdatabasesql"
	_ "github.com/riverqueue/river/riverdriver/riverpgxv5"
	_ "github.com/riverqueue/river/riverdriver/riversqlite"
	_ "github.com/rs/zerolog"
	_ "github.com/sourcegraph/conc"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
