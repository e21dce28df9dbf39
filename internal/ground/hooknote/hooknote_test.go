package hooknote

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notes") // Write creates it
	a := Note{Role: "builder", Hook: "claude Stop", IDs: []string{"m1", "m2"}}
	b := Note{Role: "oracle", Hook: "gemini AfterAgent", IDs: []string{"m3"}, AtMs: 42}
	for _, n := range []Note{a, b} {
		if err := Write(dir, n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Read(dir)
	if err != nil || len(got) != 2 {
		t.Fatalf("Read = %+v, %v; want two notes", got, err)
	}
	for i, want := range []Note{a, b} {
		g := got[i]
		if g.Err != nil || g.Note.Role != want.Role || g.Note.Hook != want.Hook || !slices.Equal(g.Note.IDs, want.IDs) || g.Note.AtMs == 0 {
			t.Errorf("note %d = %+v, want %+v in the order written", i, g, want)
		}
		if fi, err := os.Stat(g.Path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("note %d: mode %v %v, want 0600", i, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("notes dir: %v %v, want 0700", fi.Mode(), err)
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, n := range []Note{
		{Hook: "claude Stop", IDs: []string{"m"}},
		{Role: "builder", IDs: []string{"m"}},
		{Role: "builder", Hook: "claude Stop"},
		{Role: "builder", Hook: "claude Stop", IDs: []string{""}},
		{Role: "builder", Hook: "claude Stop", IDs: []string{strings.Repeat("x", 257)}},
		{Role: "builder", Hook: strings.Repeat("h", 81), IDs: []string{"m"}},
		{Role: strings.Repeat("r", 81), Hook: "claude Stop", IDs: []string{"m"}},
	} {
		dir := t.TempDir()
		if err := Write(dir, n); err == nil {
			t.Errorf("Write(%+v) = nil, want an error", n)
		}
		if es, _ := os.ReadDir(dir); len(es) != 0 {
			t.Errorf("Write(%+v) left %d files", n, len(es))
		}
	}
}

// TestNoLinksNoFIFOs: a note is never written through a link put where
// its directory goes, and a FIFO swapped in for a note is refused without
// blocking.
func TestNoLinksNoFIFOs(t *testing.T) {
	base := t.TempDir()
	elsewhere := t.TempDir()
	dir := filepath.Join(base, "notes")
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, Note{Role: "builder", Hook: "claude Stop", IDs: []string{"m"}}); err == nil {
		t.Error("Write through a symbolic link = nil, want an error")
	}
	if es, _ := os.ReadDir(elsewhere); len(es) != 0 {
		t.Errorf("Write left %d files where the link points", len(es))
	}
	if err := Write(filepath.Join(base, "missing", "notes"), Note{Role: "builder", Hook: "claude Stop", IDs: []string{"m"}}); err == nil {
		t.Error("Write with a missing parent = nil, want an error (it makes the last directory only)")
	}
	fifo := filepath.Join(base, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readNote(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("readNote of a FIFO = nil, want an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readNote blocked on a FIFO")
	}
}

func TestReadBadNotes(t *testing.T) {
	if got, err := Read(filepath.Join(t.TempDir(), "none")); got != nil || err != nil {
		t.Errorf("Read of a missing dir = %v, %v; want nothing", got, err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"1-garbage.json": "not json",
		"2-null.json":    "null",
		"3-noids.json":   `{"role":"builder","hook":"claude Stop","ids":[]}`,
		"4-norole.json":  `{"hook":"claude Stop","ids":["m"]}`,
		"5-huge.json":    `{"role":"builder","hook":"claude Stop","ids":["` + strings.Repeat("m", maxBytes) + `"]}`,
		"6-ok.json":      `{"role":"builder","hook":"claude Stop","ids":["m"]}`,
		"7-other.txt":    `{"role":"builder","hook":"claude Stop","ids":["m"]}`,
		"8-array.json":   `[1,2]`,
		"9-emptyid.json": `{"role":"builder","hook":"claude Stop","ids":[""]}`,
		"90-number.json": `{"role":7,"hook":"claude Stop","ids":["m"]}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "91-dir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "6-ok.json"), filepath.Join(dir, "92-link.json")); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ok, bad []string
	for _, f := range got {
		if f.Err != nil {
			bad = append(bad, filepath.Base(f.Path))
		} else {
			ok = append(ok, filepath.Base(f.Path))
		}
	}
	wantBad := []string{"1-garbage.json", "2-null.json", "3-noids.json", "4-norole.json", "5-huge.json", "8-array.json", "9-emptyid.json", "90-number.json"}
	if !slices.Equal(ok, []string{"6-ok.json"}) || !slices.Equal(bad, wantBad) {
		t.Errorf("Read: ok %v, bad %v; want ok [6-ok.json], bad %v (other names, dirs and links left alone)", ok, bad, wantBad)
	}
}

func FuzzReadNote(f *testing.F) {
	f.Add([]byte(`{"role":"builder","hook":"claude Stop","ids":["m"]}`))
	f.Add([]byte(`{"role":"","ids":null}`))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "n.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		n, err := readNote(path)
		if err != nil {
			return
		}
		if n.valid() != nil {
			t.Fatalf("readNote accepted an invalid note %+v", n)
		}
		dir := t.TempDir()
		if err := Write(dir, n); err != nil {
			t.Fatalf("a note read back cannot be written: %v", err)
		}
		got, err := Read(dir)
		if err != nil || len(got) != 1 || got[0].Err != nil || !slices.Equal(got[0].Note.IDs, n.IDs) {
			t.Fatalf("round trip of %+v: %+v %v", n, got, err)
		}
	})
}
