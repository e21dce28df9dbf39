package triggers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, target, id, content string
		wantName                  string
	}{
		{"basic", "architect", "hm-1-abc", "(BUILDER #1): hi", "architect.hm-1-abc.txt"},
		{"upper target lowered", "ARCH", "x1", "hello\nworld", "arch.x1.txt"},
		{"group target", "others-builder", "a.b:c", "to the others", "others-builder.a.b:c.txt"},
		{"unicode content", "oracle", "u1", "héllo 😀", "oracle.u1.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "triggers")
			path, err := Write(dir, tc.target, tc.id, tc.content)
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if path != filepath.Join(dir, tc.wantName) {
				t.Errorf("path = %q, want %q", path, filepath.Join(dir, tc.wantName))
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := "[HM-MESSAGE-ID:" + tc.id + "]\n"; !strings.HasPrefix(string(raw), want) {
				t.Errorf("first line of %q, want %q", raw, want)
			}
			id, content, err := Decode(raw)
			if err != nil || id != tc.id || content != tc.content {
				t.Errorf("Decode = %q %q %v", id, content, err)
			}
			target, ok := ParseName(filepath.Base(path))
			if !ok || target != strings.ToLower(tc.target) {
				t.Errorf("ParseName(%q) = %q %v", filepath.Base(path), target, ok)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
			}
			di, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if di.Mode().Perm() != 0o700 {
				t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
			}
			if got := listDir(t, dir); len(got) != 1 {
				t.Errorf("dir holds %v, want only the trigger (no temp left)", got)
			}
		})
	}
}

func TestWriteGeneratesID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, err := Write(dir, "builder", "", "hi")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := Decode(raw)
	if err != nil || !strings.HasPrefix(id, "hm-") || !ValidMessageID(id) {
		t.Fatalf("generated id %q, err %v", id, err)
	}
	if filepath.Base(path) != "builder."+id+".txt" {
		t.Errorf("name %q does not carry id %q", filepath.Base(path), id)
	}
	if a, b := NewMessageID(), NewMessageID(); a == b {
		t.Errorf("NewMessageID repeats: %q", a)
	}
}

func TestWriteRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, target, id, content string
		want                      error
	}{
		{"dotdot target", "..", "x", "hi", ErrBadName},
		{"path target", "../etc", "x", "hi", ErrBadName},
		{"slash target", "a/b", "x", "hi", ErrBadName},
		{"empty target", "", "x", "hi", ErrBadName},
		{"space target", "a b", "x", "hi", ErrBadName},
		{"long target", strings.Repeat("a", 65), "x", "hi", ErrBadName},
		{"dotdot id", "arch", "../../x", "hi", ErrBadName},
		{"slash id", "arch", "a/b", "hi", ErrBadName},
		{"dot id", "arch", ".hidden", "hi", ErrBadName},
		{"long id", "arch", strings.Repeat("x", 129), "hi", ErrBadName},
		{"newline id", "arch", "a\nb", "hi", ErrBadName},
		{"empty content", "arch", "x", "", ErrEmpty},
		{"blank content", "arch", "x", " \n\x00\t", ErrEmpty},
		{"too large", "arch", "x", strings.Repeat("y", DefaultMaxBytes), ErrReject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "triggers")
			path, err := Write(dir, tc.target, tc.id, tc.content)
			if !errors.Is(err, tc.want) || path != "" {
				t.Fatalf("Write = %q, %v; want %v", path, err, tc.want)
			}
			if got := listDir(t, parent); len(got) > 1 || (len(got) == 1 && got[0] != "triggers") {
				t.Errorf("parent holds %v", got)
			}
			if got := listDir(t, dir); len(got) != 0 {
				t.Errorf("dir holds %v", got)
			}
		})
	}
}

func TestWriteNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := Write(dir, "oracle", "same", "first")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Write(dir, "oracle", "same", "second")
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Write err = %v, want fs.ErrExist", err)
	}
	raw, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, content, _ := Decode(raw); content != "first" {
		t.Errorf("content = %q, want the first", content)
	}
	if got := listDir(t, dir); len(got) != 1 {
		t.Errorf("dir holds %v, want one file and no temp", got)
	}
}

func FuzzWrite(f *testing.F) {
	f.Add("architect", "hm-1-abc")
	f.Add("..", "x")
	f.Add("a", "../../../tmp/x")
	f.Add("others-builder", "a.b")
	f.Fuzz(func(t *testing.T, target, id string) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "t")
		path, err := Write(dir, target, id, "body")
		if err != nil {
			if path != "" {
				t.Fatalf("path %q with error %v", path, err)
			}
			if got := listDir(t, parent); len(got) > 1 {
				t.Fatalf("parent holds %v after failed Write", got)
			}
			return
		}
		if filepath.Dir(path) != dir {
			t.Fatalf("Write(%q, %q) wrote %q outside %q", target, id, path, dir)
		}
		got, ok := ParseName(filepath.Base(path))
		if !ok || got != strings.ToLower(target) {
			t.Fatalf("written name %q parses as %q %v", filepath.Base(path), got, ok)
		}
	})
}

// TestWriteSigned: hm-send's signed file decodes to its content with a
// signature that verifies with the writer's token.
func TestWriteSigned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := WriteSigned(dir, "Builder", "hm-5-x", "(ARCH #0): signed\nline two", "Architect", "tok")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeFile(raw)
	if err != nil || d.MessageID != "hm-5-x" || d.Content != "(ARCH #0): signed\nline two" || d.Sig == nil || d.Sig.Role != "architect" || !d.Sig.Verify("tok") {
		t.Fatalf("decoded %+v %v from %q", d, err, raw)
	}
	if _, err := WriteSigned(dir, "builder", "", "x", "architect", ""); err == nil {
		t.Error("no token: want an error")
	}
	if _, err := WriteSigned(dir, "builder", "", " \n", "architect", "tok"); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
}
