package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestParse: the version and commit come from the build info's module
// version and vcs settings; a build that recorded none says devel and
// that the commit is unknown.
func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		bi    debug.BuildInfo
		stamp string // -ldflags -X …buildinfo.stamp
		want  Info
		line  string
	}{
		{
			name: "stamped and modified",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "hm", Version: "v0.0.0-20261128153550-b0b7a7392303+dirty"},
				Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "b0b7a73923034ca340738d86e2a84dc800e6dbeb"},
					{Key: "vcs.time", Value: "2026-11-28T15:35:50Z"}, {Key: "vcs.modified", Value: "true"}}},
			want: Info{Version: "v0.0.0-20261128153550-b0b7a7392303+dirty", Commit: "b0b7a73923034ca340738d86e2a84dc800e6dbeb", Time: "2026-11-28T15:35:50Z", Modified: true, GoVersion: "go1.26.8"},
			line: "v0.0.0-20261128153550-b0b7a7392303+dirty (commit b0b7a73923034ca340738d86e2a84dc800e6dbeb, 2026-11-28T15:35:50Z, modified; go1.26.8)",
		},
		{
			name: "tagged and clean",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "hm", Version: "v0.2.0"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			want: Info{Version: "v0.2.0", Commit: "abc", GoVersion: "go1.26.8"},
			line: "v0.2.0 (commit abc; go1.26.8)",
		},
		{
			name: "devel without vcs",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "hm", Version: "(devel)"}},
			want: Info{Version: Devel, GoVersion: "go1.26.8"},
			line: "devel (commit unknown; go1.26.8)",
		},
		{
			name:  "version stamped by the linker",
			bi:    debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "hm", Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}},
			stamp: "v9.9.9-test",
			want:  Info{Version: "v9.9.9-test", Commit: "abc", GoVersion: "go1.26.8"},
			line:  "v9.9.9-test (commit abc; go1.26.8)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parse(&tt.bi, tt.stamp)
			if got != tt.want {
				t.Fatalf("parse = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.line {
				t.Errorf("String = %q, want %q", s, tt.line)
			}
		})
	}
}

// TestReadInTest: a test binary has build info, so Read never leaves the
// version or the Go version empty.
func TestReadInTest(t *testing.T) {
	t.Parallel()
	if in := Read(); in.Version == "" || in.GoVersion == "" {
		t.Fatalf("Read() = %+v: empty version or Go version", in)
	}
}
