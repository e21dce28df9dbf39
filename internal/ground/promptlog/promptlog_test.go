package promptlog

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	if got, err := Read(filepath.Join(dir, "missing.jsonl")); err != nil || got != nil {
		t.Fatalf("missing file: %v, %v", got, err)
	}
	p := filepath.Join(dir, "log.jsonl")
	if err := os.WriteFile(p, []byte(`{"prompt":"a\nb","at":1,"pid":7}`+"\n"+`{"prompt":"c","at":2,"pid":7}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil || len(got) != 2 || got[0].Prompt != "a\nb" || got[1].At != 2 || got[1].PID != 7 {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	if err := os.WriteFile(p, []byte(`{"prompt":"done","at":1,"pid":7}`+"\n"+`{"prompt":"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(p); err != nil || len(got) != 1 {
		t.Fatalf("partial last line: %+v, %v", got, err)
	}
	if err := os.WriteFile(p, []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil {
		t.Fatal("bad line accepted")
	}
}

// TestFull: a pointer line is followed by the content of the file it names;
// any other prompt, or a pointer to a missing file, is itself.
func TestFull(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.txt")
	if err := os.WriteFile(path, []byte("line one\nline two"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ prompt, want string }{
		{"plain [hm:x]", "plain [hm:x]"},
		{"p … [full message (17 bytes) in " + path + "] [hm:x]", "p … [full message (17 bytes) in " + path + "] [hm:x]\nline one\nline two"},
		{"p … [full message (3 bytes) in /no/such/file] [hm:x]", "p … [full message (3 bytes) in /no/such/file] [hm:x]"},
	} {
		if got := (Prompt{Prompt: tc.prompt}).Full(); got != tc.want {
			t.Errorf("Full(%q) = %q, want %q", tc.prompt, got, tc.want)
		}
	}
}
