// Package buildinfo says which Forge this is: the version, commit and build
// date `make build` and `make release` stamp with -ldflags -X, and, where
// they did not (go build, go install), what the Go toolchain recorded of
// the repository (runtime/debug.ReadBuildInfo's vcs.* settings).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the Makefile: -X github.com/forge-dev/forge/internal/buildinfo.Version=….
var (
	Version string
	Commit  string
	Date    string
)

// Info is one build's identity.
type Info struct {
	Version  string // a release's version, "(devel)" for a build of a working tree
	Commit   string // the commit built, empty when unknown
	Date     string // the build date (-ldflags) or, failing that, the commit's time
	Modified bool   // the working tree had changes the commit lacks
	Go       string // the Go toolchain that built it
	Platform string // GOOS/GOARCH
}

// Get is this binary's Info: the stamped values first, the toolchain's
// record for what they leave out.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	return get(Info{Version: Version, Commit: Commit, Date: Date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}, bi, ok)
}

func get(info Info, bi *debug.BuildInfo, ok bool) Info {
	if !ok {
		return info.orUnknown()
	}
	if info.Version == "" && bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if info.Commit == "" {
		info.Commit = vcs["vcs.revision"]
	}
	if info.Date == "" {
		info.Date = vcs["vcs.time"]
	}
	// The toolchain's word on the working tree counts for its own commit only.
	info.Modified = info.Commit == vcs["vcs.revision"] && vcs["vcs.modified"] == "true"
	return info.orUnknown()
}

func (i Info) orUnknown() Info {
	if i.Version == "" {
		i.Version = "(devel)"
	}
	return i
}

// String is the line `forge version` prints.
func (i Info) String() string {
	commit, date := i.Commit, i.Date
	if commit == "" {
		commit = "unknown"
	}
	if i.Modified {
		commit += " (modified)"
	}
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("forge %s, commit %s, built %s, %s %s", i.Version, commit, date, i.Go, i.Platform)
}
