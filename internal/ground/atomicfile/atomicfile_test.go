package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// noTemps fails the test if dir holds a temp file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	for _, name := range entries(t, dir) {
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("temp file left in %s: %s", dir, name)
		}
	}
}

type writeFunc func(string, []byte, fs.FileMode) error

var writers = []struct {
	name  string
	write writeFunc
}{
	{"WriteFile", WriteFile},
	{"WriteNew", WriteNew},
}

func TestWriteContentAndMode(t *testing.T) {
	tests := []struct {
		name  string
		umask int
		mode  fs.FileMode
		data  []byte
	}{
		{"0600 default umask", 0o022, 0o600, []byte("secret\n")},
		{"0644 umask 0", 0, 0o644, []byte("{\"a\":1}\n")},
		{"0640 umask 077 (mode is exact)", 0o077, 0o640, []byte("x")},
		{"0666 umask 0", 0, 0o666, []byte("world")},
		{"empty file", 0o022, 0o600, nil},
		{"large file", 0o022, 0o600, bytes.Repeat([]byte("0123456789"), 100_000)},
	}
	for _, w := range writers {
		for _, tc := range tests {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				old := setUmask(tc.umask)
				defer setUmask(old)
				dir := t.TempDir()
				path := filepath.Join(dir, "f.json")
				if err := w.write(path, tc.data, tc.mode); err != nil {
					t.Fatalf("%s: %v", w.name, err)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.data) {
					t.Errorf("content: %d bytes, want %d", len(got), len(tc.data))
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != tc.mode {
					t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.mode)
				}
				if names := entries(t, dir); len(names) != 1 {
					t.Errorf("dir holds %v, want only f.json", names)
				}
			})
		}
	}
}

func TestWriteFileOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old content that is longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content %q %v, want new", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	noTemps(t, dir)
}

func TestWriteNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := WriteNew(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(path, []byte("second"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteNew: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first" {
		t.Errorf("content %q, want first", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("dir holds %v, want only a.txt", names)
	}
}

// TestWriteFailureCleansUp: a write that fails leaves no temp file and does
// not disturb what is at the destination.
func TestWriteFailureCleansUp(t *testing.T) {
	tests := []struct {
		name    string
		write   writeFunc
		prepare func(t *testing.T, path string)
		wantErr error // nil: any error
	}{
		{"WriteFile onto a directory", WriteFile, func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "child"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"WriteNew onto a directory", WriteNew, func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, fs.ErrExist},
		{"WriteNew onto a file", WriteNew, func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, fs.ErrExist},
		{"WriteNew onto a dangling symlink", WriteNew, func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(path), "nowhere"), path); err != nil {
				t.Fatal(err)
			}
		}, fs.ErrExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "target")
			tc.prepare(t, path)
			before := entries(t, dir)
			err := tc.write(path, []byte("data"), 0o600)
			if err == nil {
				t.Fatal("write succeeded")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("err %q does not name %s", err, path)
			}
			noTemps(t, dir)
			if after := entries(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("dir holds %v, want %v", after, before)
			}
		})
	}
}

func TestWriteMissingDir(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			parent := t.TempDir()
			err := w.write(filepath.Join(parent, "missing", "f"), []byte("x"), 0o600)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("err %v, want fs.ErrNotExist", err)
			}
			if names := entries(t, parent); len(names) != 0 {
				t.Errorf("parent holds %v", names)
			}
		})
	}
}

// TestConcurrentWriters: writers racing on one path leave exactly one of
// their complete contents and no temp files; with WriteNew exactly one wins.
func TestConcurrentWriters(t *testing.T) {
	const n = 16
	content := func(i int) []byte {
		return bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "shared")
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { errs[i] = w.write(path, content(i), 0o600) })
			}
			wg.Wait()
			wins := 0
			for i, err := range errs {
				switch {
				case err == nil:
					wins++
				case w.name == "WriteNew" && errors.Is(err, fs.ErrExist):
				default:
					t.Errorf("writer %d: %v", i, err)
				}
			}
			if w.name == "WriteNew" && wins != 1 {
				t.Errorf("%d WriteNew calls succeeded, want 1", wins)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			whole := false
			for i := range n {
				if bytes.Equal(got, content(i)) {
					whole = true
				}
			}
			if !whole {
				t.Errorf("final content (%d bytes) is none of the writers' contents", len(got))
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Errorf("dir holds %v, want only shared", names)
			}
		})
	}
}

func TestRenameNoReplace(t *testing.T) {
	tests := []struct {
		name     string
		existing bool
		wantErr  error
	}{
		{"free name", false, nil},
		{"taken name", true, fs.ErrExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "sub", "dst")
			if err := os.Mkdir(filepath.Dir(dst), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, []byte("moved"), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.existing {
				if err := os.WriteFile(dst, []byte("kept"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := RenameNoReplace(src, dst)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			want, srcLeft := "moved", false
			if tc.existing {
				want, srcLeft = "kept", true
			}
			if got, _ := os.ReadFile(dst); string(got) != want {
				t.Errorf("dst holds %q, want %q", got, want)
			}
			if _, err := os.Lstat(src); (err == nil) != srcLeft {
				t.Errorf("src exists = %v, want %v", err == nil, srcLeft)
			}
		})
	}
}
