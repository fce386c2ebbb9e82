package ghdouble

import (
	"maps"
	"slices"
	"strings"
)

// GitTokens are the installation tokens that git requests to repo were
// served with, as copies, for tests of how a client scopes the tokens it
// fetches with: their repositories (RepoIDs) and permissions.
func (s *Server) GitTokens(repo string) []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Token
	for _, tok := range s.tokens {
		if slices.ContainsFunc(tok.gitRepos, func(r string) bool { return strings.EqualFold(r, repo) }) {
			out = append(out, Token{
				Value: tok.Value, InstallationID: tok.InstallationID, ExpiresAt: tok.ExpiresAt,
				Permissions: maps.Clone(tok.Permissions), RepoIDs: slices.Clone(tok.RepoIDs),
			})
		}
	}
	slices.SortFunc(out, func(a, b Token) int { return strings.Compare(a.Value, b.Value) })
	return out
}
