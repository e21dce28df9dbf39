package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVersionEveryEntry: hm --version, hm version, hm-send --version and
// hm-bg --version print the program's name and the one build's version and
// exit 0 (issue #34 item 5: each exited 2), both from the thin mains of
// go build ./cmd/... and from links named hm-send and hm-bg to the one hm
// binary (make build, make install), which is then that program.
func TestVersionEveryEntry(t *testing.T) {
	t.Parallel()
	hm, _ := hmBinary(t, "hm")
	links := t.TempDir()
	for _, name := range []string{"hm-send", "hm-bg"} {
		if err := os.Symlink(hm, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		bin  string // a path, or a name hmBinary builds
		args []string
		code int
		out  string // stdout's prefix
		err  string // in stderr
	}{
		{"hm", []string{"--version"}, 0, "hm ", ""},
		{"hm", []string{"version"}, 0, "hm ", ""},
		{"hm-send", []string{"--version"}, 0, "hm-send ", ""},
		{"hm-bg", []string{"--version"}, 0, "hm-bg ", ""},
		{filepath.Join(links, "hm-send"), []string{"--version"}, 0, "hm-send ", ""},
		{filepath.Join(links, "hm-bg"), []string{"--version"}, 0, "hm-bg ", ""},
		{filepath.Join(links, "hm-send"), nil, 2, "", "usage: hm-send <target>"},
		{filepath.Join(links, "hm-bg"), nil, 2, "", "usage: hm-bg spawn"},
	}
	var version string // what follows the name: the same for every entry
	for _, tt := range tests {
		bin := tt.bin
		if !filepath.IsAbs(bin) {
			bin, _ = hmBinary(t, bin)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, bin, tt.args...)
		cmd.Env = cleanEnv(t.TempDir())
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		what := filepath.Base(tt.bin) + " " + strings.Join(tt.args, " ")
		if code != tt.code || !strings.HasPrefix(out.String(), tt.out) || !strings.Contains(errb.String(), tt.err) {
			t.Errorf("%s (%s): exit %d (want %d), stdout %q (want prefix %q), stderr %q (want %q)", what, bin, code, tt.code, out.String(), tt.out, errb.String(), tt.err)
			continue
		}
		if tt.out == "" {
			continue
		}
		v := strings.TrimPrefix(out.String(), tt.out)
		if version == "" {
			version = v
		} else if v != version {
			t.Errorf("%s says %q; hm said %q", what, v, version)
		}
	}
	if !strings.Contains(version, "commit ") {
		t.Errorf("version line %q names no commit", version)
	}
}
