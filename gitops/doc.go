// Package gitops gives Forge's jobs the git side of a repository: one cached
// mirror per repository, refreshed by fetch, files read from it, and
// throw-away working copies made from it for agents to work in, with the
// changes and content hashes the phase runner commits and retries with.
// Commits themselves go through the Git Data API, not through this package.
//
// Tokens are passed per operation and never written: neither a mirror nor a
// working copy holds a credential, a remote URL with userinfo or anything an
// agent running inside a working copy should not read.
package gitops
