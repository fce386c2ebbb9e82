// Package forge holds the files the binary embeds from the repository root.
package forge

import "embed"

// AppManifest is app.yml: the App's name, events and least permissions.
//
//go:embed app.yml
var AppManifest []byte

// GitHubDescription is testdata/openapi/api.github.com.json, GitHub's
// OpenAPI description trimmed to what the GitHub double serves: the double
// validates every request against it, in the tests and in `forge demo`.
//
//go:embed testdata/openapi/api.github.com.json
var GitHubDescription []byte

// WebhookPayloads are testdata/webhooks' recorded payloads of GitHub's
// webhooks, which the GitHub double edits into the deliveries it sends.
//
//go:embed testdata/webhooks
var WebhookPayloads embed.FS
