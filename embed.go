// Package forge holds the files the binary embeds from the repository root.
package forge

import _ "embed"

// AppManifest is app.yml: the App's name, events and least permissions.
//
//go:embed app.yml
var AppManifest []byte
