package realcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePins(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []CLI
		err      string
	}{
		{"pins", "# c\n\n@a/b 1.2.3 b\n  @c/d 0.1.0 d  \n", []CLI{{"@a/b", "1.2.3", "b"}, {"@c/d", "0.1.0", "d"}}, ""},
		{"missing binary", "@a/b 1.2.3\n", nil, "line 1"},
		{"empty", "# nothing\n", nil, "no CLI pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePins(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("%v %v, want %v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("[%d] %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestFindNamesMakeDeps: the repository's pin file names the three CLIs,
// and one missing from the cache is an error that says to run make deps.
func TestFindNamesMakeDeps(t *testing.T) {
	clis, err := Pinned()
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]bool{}
	for _, c := range clis {
		bins[c.Bin] = true
	}
	for _, b := range []string{"claude", "codex", "gemini"} {
		if !bins[b] {
			t.Errorf("%s pins no %s", PinFile(), b)
		}
	}
	t.Setenv("HM_CLI_CACHE", t.TempDir())
	if _, _, err := Find("claude"); err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Errorf("Find in an empty cache: %v, want an error naming make deps", err)
	}
	dir := filepath.Join(CacheDir(), clis[0].Spec(), "node_modules", ".bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, clis[0].Bin), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, _, err := Find(clis[0].Bin); err != nil || p != filepath.Join(dir, clis[0].Bin) {
		t.Errorf("Find: %q %v", p, err)
	}
}
