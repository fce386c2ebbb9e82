// Package gitops gives Forge's jobs the git side of a repository: one cached
// mirror per repository, refreshed by fetch, files read from it, and
// throw-away working copies made from it for agents to work in, with the
// changes and content hashes the phase runner commits and retries with.
// Commits are not made here: they go through GitHub's API, so that GitHub
// signs them and a commit never overwrites a push it did not see (see
// app/githubapi.go's CommitFiles): GraphQL's createCommitOnBranch first, the
// Git Data API for what that mutation cannot say (a file's mode, a workflow
// file, a large change) and on a GitHub without it.
//
// Tokens are passed per operation and never written: neither a mirror nor a
// working copy holds a credential, a remote URL with userinfo or anything an
// agent running inside a working copy should not read.
package gitops
