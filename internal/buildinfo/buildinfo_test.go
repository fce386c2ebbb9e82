package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestGet: the Makefile's stamps win; what they leave out comes from the
// toolchain's record (go build in a git checkout, go install module@v),
// whose "modified" counts only for the commit it recorded.
func TestGet(t *testing.T) {
	vcs := func(rev, time, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: time}, {Key: "vcs.modified", Value: modified},
		}}
	}
	base := Info{Go: "go1.26.8", Platform: "linux/amd64"}
	stamped := base
	stamped.Version, stamped.Commit, stamped.Date = "v1.2.3", "aaaa", "2026-01-02T03:04:05Z"
	cases := []struct {
		name string
		in   Info
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"nothing known", base, nil, false, "forge (devel), commit unknown, built unknown, go1.26.8 linux/amd64"},
		{"go build in a checkout", base, vcs("bbbb", "2026-03-04T05:06:07Z", "false"), true, "forge (devel), commit bbbb, built 2026-03-04T05:06:07Z, go1.26.8 linux/amd64"},
		{"a dirty checkout", base, vcs("bbbb", "2026-03-04T05:06:07Z", "true"), true, "forge (devel), commit bbbb (modified), built 2026-03-04T05:06:07Z, go1.26.8 linux/amd64"},
		{"go install module@version", base, &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, true, "forge v1.0.0, commit unknown, built unknown, go1.26.8 linux/amd64"},
		{"make build", stamped, vcs("aaaa", "2026-03-04T05:06:07Z", "true"), true, "forge v1.2.3, commit aaaa (modified), built 2026-01-02T03:04:05Z, go1.26.8 linux/amd64"},
		{"stamped another commit", stamped, vcs("bbbb", "2026-03-04T05:06:07Z", "true"), true, "forge v1.2.3, commit aaaa, built 2026-01-02T03:04:05Z, go1.26.8 linux/amd64"},
	}
	for _, c := range cases {
		if got := get(c.in, c.bi, c.ok).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
