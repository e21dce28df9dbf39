package report

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

// checkNoTemp asserts no temporary files were left in dir.
func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteHandoff(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), ".squidrun", "handoffs")
	session := filepath.Join(dir, SessionFile)
	last := filepath.Join(dir, LastSessionFile)

	steps := []struct {
		data        string
		wantChanged bool
		wantSession string
		wantLast    string // "" = must not exist
	}{
		{"first\n", true, "first\n", ""},
		{"first\n", false, "first\n", ""},
		{"second\n", true, "second\n", "first\n"},
		{"second\n", false, "second\n", "first\n"},
		{"third\n", true, "third\n", "second\n"},
		{"", true, "", "third\n"},
	}
	for i, s := range steps {
		changed, err := WriteHandoff(dir, []byte(s.data))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if changed != s.wantChanged {
			t.Errorf("step %d: changed = %v, want %v", i, changed, s.wantChanged)
		}
		if got := readFile(t, session); got != s.wantSession {
			t.Errorf("step %d: session.md = %q, want %q", i, got, s.wantSession)
		}
		if s.wantLast == "" {
			if _, err := os.Stat(last); !os.IsNotExist(err) {
				t.Errorf("step %d: last-session.md exists (%v)", i, err)
			}
		} else {
			if got := readFile(t, last); got != s.wantLast {
				t.Errorf("step %d: last-session.md = %q, want %q", i, got, s.wantLast)
			}
			checkMode(t, last, 0o600)
		}
		checkMode(t, session, 0o600)
		checkNoTemp(t, dir)
	}
	checkMode(t, dir, 0o700)
}

// TestWriteHandoffSkipKeepsFile checks that an unchanged handoff is not
// rewritten at all.
func TestWriteHandoffSkipKeepsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := WriteHandoff(dir, []byte("same")); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(dir, SessionFile)
	before, err := os.Stat(session)
	if err != nil {
		t.Fatal(err)
	}
	changed, err := WriteHandoff(dir, []byte("same"))
	if err != nil || changed {
		t.Fatalf("rewrite of identical content: changed=%v err=%v", changed, err)
	}
	after, err := os.Stat(session)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("identical content replaced session.md")
	}
}

func TestWriteHandoffConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := WriteHandoff(dir, []byte(strings.Repeat("x", i+1))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := readFile(t, filepath.Join(dir, SessionFile))
	if got == "" || strings.Trim(got, "x") != "" {
		t.Errorf("session.md = %q after concurrent writes", got)
	}
	checkNoTemp(t, dir)
}

func TestWriteHandoffErrors(t *testing.T) {
	t.Parallel()
	// dir is a regular file: nothing can be created under it.
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteHandoff(f, []byte("x")); err == nil {
		t.Error("WriteHandoff under a regular file succeeded")
	}
	if err := WriteBriefing(filepath.Join(f, "briefing.md"), []byte("x")); err == nil {
		t.Error("WriteBriefing under a regular file succeeded")
	}
	// session.md is a directory: it cannot be read as the previous copy.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, SessionFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteHandoff(dir, []byte("x")); err == nil {
		t.Error("WriteHandoff over a directory named session.md succeeded")
	}
	checkNoTemp(t, dir)
}

func TestWriteBriefing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "handoffs")
	path := filepath.Join(dir, BriefingFile)
	for _, data := range []string{"one\n", "two\n", "two\n"} {
		if err := WriteBriefing(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != data {
			t.Errorf("briefing.md = %q, want %q", got, data)
		}
		checkMode(t, path, 0o600)
		checkNoTemp(t, dir)
	}
	checkMode(t, dir, 0o700)
}
