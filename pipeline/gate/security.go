package gate

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// SecurityWords are the words whose mention makes a plan concern security
// (seed 002's security gate): a fixed list, matched whole and
// case-insensitive, that the configuration's documentation lists (a test
// holds the two together). A phrase's words may be apart by any space.
var SecurityWords = []string{
	"acl", "api key", "auth", "authenticate", "authentication", "authn", "authorisation", "authorise",
	"authorization", "authorize", "authz", "certificate", "certificates", "cipher", "credential",
	"credentials", "crypto", "cryptographic", "cryptography", "csrf", "cve", "decrypt", "decryption",
	"encrypt", "encryption", "exploit", "hmac", "oauth", "openid", "passphrase", "password", "passwords",
	"permission", "permissions", "private key", "privilege", "privileges", "rbac", "saml", "secret",
	"secrets", "signing key", "sso", "tls", "vulnerability", "vulnerabilities", "xss",
}

// securityWordsRe matches any of SecurityWords, whole: between non-word
// characters (a letter, a digit or '_' next to it makes it part of
// another word: "author", "auth_test", "tlsConfig").
var securityWordsRe = func() *regexp.Regexp {
	alts := make([]string, len(SecurityWords))
	for i, w := range SecurityWords {
		alts[i] = strings.ReplaceAll(regexp.QuoteMeta(w), " ", `\s+`)
	}
	return regexp.MustCompile(`(?i)(?:^|[^\p{L}\p{N}_])(` + strings.Join(alts, "|") + `)(?:$|[^\p{L}\p{N}_])`)
}()

// maxConcernPaths bounds the paths a Concern keeps: plan text may name
// thousands. maxConcernPath bounds one path's length, in bytes.
const (
	maxConcernPaths = 20
	maxConcernPath  = 300
)

// Concern is why a plan concerns security, and who must approve it.
type Concern struct {
	// Paths are the files and writes globs the plan names that match
	// security.paths, each with the first pattern it matches, at most
	// maxConcernPaths; MorePaths counts the others.
	Paths     []PathHit `json:",omitempty"`
	MorePaths int       `json:",omitempty"`
	// Words are the SecurityWords the plan's text names, in the list's
	// order.
	Words []string `json:",omitempty"`
	// Reviewers are security.reviewers: one of them must approve the plan.
	Reviewers []string `json:",omitempty"`
}

// PathHit is a path of the plan that matched a pattern of security.paths.
type PathHit struct {
	Path, Pattern string
}

// Applies reports whether the plan concerns security at all.
func (c Concern) Applies() bool { return len(c.Paths) > 0 || c.MorePaths > 0 || len(c.Words) > 0 }

// SecurityConcern reads what plan says it changes and what it says, as
// the security gate does (repoconfig.Security): the files of its Changes
// section and the globs its phases write (phases.Touches), as written,
// matched against rules.Paths, case-insensitive; and the SecurityWords
// its text names outside the sections Forge and the implementer write
// (audit.IsForgeSection). changed are paths a change made (the final
// audit's diff), matched as the plan's are. Characters that show nothing
// (zero-width spaces, joiners) are dropped before the words are looked
// for, so they cannot hide one. Nothing in the plan can make the answer
// smaller than its text warrants: there is no marker that turns the gate
// off.
func SecurityConcern(plan string, rules repoconfig.Security, changed ...string) Concern {
	c := Concern{Reviewers: slices.Clone(rules.Reviewers)}
	files, writes := phases.Touches(plan)
	seen := map[string]bool{}
	for _, p := range slices.Concat(files, writes, changed) {
		key := strings.ToLower(p)
		if seen[key] {
			continue
		}
		seen[key] = true
		pattern, ok := securityPath(rules.Paths, key)
		if !ok {
			continue
		}
		if len(c.Paths) == maxConcernPaths || len(p) > maxConcernPath {
			c.MorePaths++
			continue
		}
		c.Paths = append(c.Paths, PathHit{Path: p, Pattern: pattern})
	}
	c.Words = securityWords(planText(plan))
	return c
}

// securityPath is the first pattern of globs that path (lower-cased)
// matches, lower-cased too, and whether there is one.
func securityPath(globs []string, path string) (string, bool) {
	for _, g := range globs {
		if ok, err := doublestar.Match(strings.ToLower(g), path); ok && err == nil {
			return g, true
		}
	}
	return "", false
}

// planText is the plan as its authors wrote it: without the sections
// Forge and the implementer write, and without the characters that show
// nothing.
func planText(plan string) string {
	var b strings.Builder
	skipLevel := 0
	for _, l := range markdown.Scan(plan) {
		if level, title, ok := l.Heading(); ok && !l.Code {
			if skipLevel > 0 && level <= skipLevel {
				skipLevel = 0
			}
			if skipLevel == 0 && audit.IsForgeSection(markdown.Fold(title)) {
				skipLevel = level
			}
		}
		if skipLevel > 0 {
			continue
		}
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, b.String())
}

// securityWords are the SecurityWords text names, in the list's order.
func securityWords(text string) []string {
	found := map[string]bool{}
	// A match takes the character after the word: the next word may
	// begin right there, so the search goes on from the word's end.
	for rest := text; ; {
		m := securityWordsRe.FindStringSubmatchIndex(rest)
		if m == nil {
			break
		}
		found[strings.Join(strings.Fields(strings.ToLower(rest[m[2]:m[3]])), " ")] = true
		rest = rest[m[3]:]
	}
	var out []string
	for _, w := range SecurityWords {
		if found[w] {
			out = append(out, w)
		}
	}
	return out
}

// Security is the security gate as Evaluate weighs it.
type Security struct {
	Concern Concern
	// Teams are the teams among Concern.Reviewers, "org/team"
	// lower-cased, each with the membership state ("active", "pending")
	// of the people who approved, by lower-cased login; a person missing
	// is no member.
	Teams map[string]map[string]string
	// Unreadable are the teams GitHub would not show the App (it lacks
	// the organization permission Members).
	Unreadable []string
}

// missing says what the security gate lacks when approvers approved the
// plan: nothing when the plan does not concern security, no reviewer is
// named, or one of approvers is a reviewer (by login, or an active member
// of a reviewer team). A pending member's approval is named as not
// counting, and so is a team Forge cannot read.
func (s *Security) missing(approvers []string) []templates.Reason {
	if s == nil || !s.Concern.Applies() || len(s.Concern.Reviewers) == 0 {
		return nil
	}
	var logins, teams []string
	for _, r := range s.Concern.Reviewers {
		if strings.Contains(r, "/") {
			teams = append(teams, r)
		} else {
			logins = append(logins, r)
		}
	}
	var notes []templates.Reason
	for _, a := range approvers {
		if slices.ContainsFunc(logins, func(l string) bool { return strings.EqualFold(l, a) }) {
			return nil
		}
		for _, team := range teams {
			switch s.Teams[strings.ToLower(team)][strings.ToLower(a)] {
			case "active":
				return nil
			case "pending":
				notes = append(notes, templates.Reason{Event: "security-pending", User: a, Team: team})
			}
		}
	}
	for _, team := range teams {
		if slices.ContainsFunc(s.Unreadable, func(u string) bool { return strings.EqualFold(u, team) }) {
			notes = append(notes, templates.Reason{Event: "team-unreadable", Team: team})
		}
	}
	return append([]templates.Reason{{Event: "security", Users: logins, Teams: teams, Paths: s.Concern.PathList(3), Words: s.Concern.Words}}, notes...)
}

// PathList is at most n of the concern's paths, for a reason's one line.
func (c Concern) PathList(n int) []string {
	var out []string
	for _, p := range c.Paths {
		if len(out) == n {
			break
		}
		out = append(out, p.Path)
	}
	return out
}
