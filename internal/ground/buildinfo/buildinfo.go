// Package buildinfo is what a build of hm says about itself: the module
// version and the commit it was built from, as the Go toolchain recorded
// them (runtime/debug.ReadBuildInfo). `hm --version`, app-status.json and
// the MCP server's implementation info all read it here.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Devel is the version of a build that recorded none: `go run`, or
// `go build` with -buildvcs=false outside a tagged module.
const Devel = "devel"

// stamp, set by a build that names its own version (go build -ldflags
// "-X hm/internal/ground/buildinfo.stamp=v1.2.3": a release, or a test's
// second build of the same tree), is the version instead of the module's.
var stamp string

// Info is one build's description.
type Info struct {
	Version   string `json:"version"`            // module version (a tag, a pseudo-version) or Devel
	Commit    string `json:"commit,omitempty"`   // vcs.revision; "" when not recorded
	Time      string `json:"time,omitempty"`     // vcs.time, the commit's time
	Modified  bool   `json:"modified,omitempty"` // vcs.modified: built with uncommitted changes
	GoVersion string `json:"go"`
}

// Read returns this binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return parse(&debug.BuildInfo{}, stamp)
	}
	return parse(bi, stamp)
}

// parse extracts Info from build info; a non-empty stamp is the version.
func parse(bi *debug.BuildInfo, stamp string) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	switch {
	case stamp != "":
		in.Version = stamp
	case in.Version == "" || in.Version == "(devel)":
		in.Version = Devel
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// Version is this binary's version (Read().Version).
func Version() string { return Read().Version }

// String is the one line `hm --version` prints after the program's name:
// "v1.2.3 (commit 0123abc…, 2026-01-02T03:04:05Z, modified; go1.26.8)".
func (in Info) String() string {
	var parts []string
	if in.Commit != "" {
		parts = append(parts, "commit "+in.Commit)
	} else {
		parts = append(parts, "commit unknown")
	}
	if in.Time != "" {
		parts = append(parts, in.Time)
	}
	if in.Modified {
		parts = append(parts, "modified")
	}
	return fmt.Sprintf("%s (%s; %s)", in.Version, strings.Join(parts, ", "), in.GoVersion)
}
