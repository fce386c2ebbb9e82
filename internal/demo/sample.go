package demo

import (
	"embed"
	"io/fs"
	"path"
	"strings"
)

// The sample repository, acme/greeter: a small Go service (before/), and
// the files the demo's implementer writes in the plan's phases (after/).
// Both build and pass their tests (TestSampleBuildsAndPasses), so the CI
// the double plays reports what a real run would.
//
//go:embed all:testdata/greeter
var greeter embed.FS

// goMod is the sample's go.mod: a go.mod file beside the others would make
// their directory a module of its own, which go:embed leaves out.
const goMod = "module github.com/acme/greeter\n\ngo 1.22\n"

// sampleFiles are the sample repository's files at its first commit.
func sampleFiles() map[string]string {
	files := readTree("testdata/greeter/before")
	files["go.mod"] = goMod
	return files
}

// phaseFiles are the files the implementer writes, by path.
func phaseFiles() map[string]string { return readTree("testdata/greeter/after") }

func readTree(root string) map[string]string {
	out := map[string]string{}
	err := fs.WalkDir(greeter, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(greeter, p)
		out[strings.TrimPrefix(p, root+"/")] = string(data)
		return err
	})
	if err != nil {
		panic("demo: the embedded sample repository: " + err.Error()) // the binary was built without it
	}
	return out
}

// Names in the sample and its story.
const (
	sampleRepo  = "acme/greeter"
	sampleOwner = "acme"
	// Person is who uses the pages: octocat, with write access.
	Person = "octocat"
	// reporter opened the issue the demo starts with.
	reporter = "mona"
)

const firstIssueTitle = "Rate-limit GET /hello"

const firstIssueBody = `A client script calls ` + "`/hello`" + ` in a tight loop and the service sits at 100% CPU,
so everyone else waits. One client should not be able to do that: when it asks too often, answer
` + "`429 Too Many Requests`" + ` and keep greeting everybody else.`

// The plan the demo's drafter writes, and what its reviser changes in it.
// Each section follows the template's header, which the drafter keeps.
const draftSections = `## Objective

Answer ` + "`429 Too Many Requests`" + ` when one client calls ` + "`GET /hello`" + ` more often than the service allows,
so a runaway script can no longer keep the service busy (issue #1). Everyone else keeps being greeted.

## Scope

In scope: a per-client token bucket in front of ` + "`/hello`" + `, its flags and its documentation.
Out of scope: a limit shared by several instances, and authentication.

## Changes

- ` + "`ratelimit/limiter.go`" + ` (new) — a token-bucket ` + "`Limiter`" + `: ` + "`Allow(key string) bool`" + ` refills ` + "`rate`" + ` tokens
  per second up to ` + "`burst`" + `, one bucket per key, with the clock injectable for tests.
- ` + "`ratelimit/limiter_test.go`" + ` (new) — a burst is allowed, the next request refused, one allowed
  again after a refill; keys do not share a bucket.
- ` + "`main.go`" + ` — wrap the ` + "`/hello`" + ` handler: a refused request gets ` + "`429`" + ` with ` + "`Retry-After: 1`" + `;
  clients are keyed by ` + "`r.RemoteAddr`" + `; new flags ` + "`-rate`" + ` (default 5 per second) and ` + "`-burst`" + ` (default 10).
- ` + "`README.md`" + ` — document the limit and its flags.

## Risks

- A limit set too low refuses real users: the defaults allow a burst of 10 and 5 requests per
  second, and both are flags.
- The limiter sits on every request: it takes one mutex per request and allocates nothing once a
  client has its bucket.

## Testing

- ` + "`go test ./ratelimit`" + ` covers the bucket arithmetic with a fake clock.
- ` + "`go vet ./...`" + ` and ` + "`go test ./...`" + ` run in CI on every phase.

---

## Audit Log

---

## Implementation Notes
`

// revisions are the reviser's edits of the draft, each an old text and
// its replacement: they resolve the first audit round's findings.
var revisions = []struct{ old, new string }{
	{
		"  per second up to `burst`, one bucket per key, with the clock injectable for tests.",
		"  per second up to `burst`, one bucket per key, with the clock injectable for tests; buckets idle\n" +
			"  for a minute are dropped on the next call, so memory follows the clients of the last minute.",
	},
	{
		"  clients are keyed by `r.RemoteAddr`; new flags `-rate` (default 5 per second) and `-burst` (default 10).",
		"  a client is the host part of `r.RemoteAddr` (`net.SplitHostPort`), so every connection of one\n" +
			"  client shares its bucket; new flags `-rate` (default 5 per second) and `-burst` (default 10).\n" +
			"- `main_test.go` (new) — requests of one host on different ports share a bucket: the third of a\n" +
			"  burst of 2 gets `429` with `Retry-After: 1`, and another host is still greeted.",
	},
	{
		"- `go test ./ratelimit` covers the bucket arithmetic with a fake clock.",
		"- `go test ./ratelimit` covers the bucket arithmetic with a fake clock, and idle buckets being\n" +
			"  dropped.\n" +
			"- `go test .` runs `main_test.go`: the `429` path of `/hello` itself, keyed per host.",
	},
}

// revise applies the revisions to a plan; ok is false when none applied
// (a person rewrote the plan meanwhile).
func revise(plan string) (string, bool) {
	applied := false
	for _, r := range revisions {
		if strings.Contains(plan, r.old) {
			plan = strings.Replace(plan, r.old, r.new, 1)
			applied = true
		}
	}
	return plan, applied
}

// lineOf is the 1-based number of the first line of text that starts
// with prefix (after its indentation), 0 when none does.
func lineOf(text, prefix string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return i + 1
		}
	}
	return 0
}

// isSampleFile reports whether the implementer knows what to write at p.
func isSampleFile(p string) bool {
	_, ok := phaseFiles()[path.Clean(p)]
	return ok
}
